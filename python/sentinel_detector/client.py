"""A small client for `sentinel serve` (docs/agents.md "The server"), standard library only.

    c = ServeClient("http://127.0.0.1:8090", api_key=None)
    c.score("Question: 2+2?", ["4", "5"])               # [r0, r1]
    c.rerank("Question: 2+2?", ["4", "5"], top_n=1)     # [{"index": 0, "relevance_score": r}]
    d = c.debate(sentinels=[0, 1, 2], question="2+2?")  # a session running Algorithm 1
    d.round([{"agent": 0, "text": "..."}, ...])         # scores, exclusions, blacklists
"""
import json
import urllib.error
import urllib.request


class ServeError(Exception):
    """An error reply: .status (HTTP) and the server's message."""

    def __init__(self, status, message):
        super().__init__("%s: %s" % (status, message))
        self.status = status
        self.message = message


class ServeClient:
    def __init__(self, url="http://127.0.0.1:8090", api_key=None, timeout=600):
        self.url = url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout

    def _call(self, method, path, body=None):
        data = json.dumps(body).encode("utf-8") if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        if self.api_key:
            req.add_header("Authorization", "Bearer " + self.api_key)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                raw = r.read()
                return json.loads(raw) if raw else None
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                msg = json.loads(raw)["error"]["message"]
            except Exception:
                msg = raw.decode("utf-8", "replace")
            raise ServeError(e.code, msg) from None

    def health(self):
        return self._call("GET", "/health")

    def models(self):
        return self._call("GET", "/v1/models")

    def score(self, context, responses):
        return self._call("POST", "/v1/score", {"context": context,
                                                "responses": list(responses)})["scores"]

    def score_pairs(self, pairs):
        return self._call("POST", "/v1/score", {"pairs": [
            {"context": c, "response": r} for c, r in pairs]})["scores"]

    def rerank(self, query, documents, top_n=None):
        body = {"query": query, "documents": list(documents)}
        if top_n is not None:
            body["top_n"] = int(top_n)
        return self._call("POST", "/v1/rerank", body)["results"]

    def debate(self, sentinels, question=None, options=None, task=None, k=1, rule="all",
               seed=0):
        body = {"sentinels": list(sentinels), "k": k, "rule": rule, "seed": seed}
        if task is not None:
            body["task"] = task
        else:
            body["question"] = question
            if options:
                body["options"] = list(options)
        return Debate(self, self._call("POST", "/v1/debates", body))


class Debate:
    """A debate session on the server: Algorithm 1 for each of its sentinels."""

    def __init__(self, client, state):
        self.client = client
        self.id = state["id"]
        self.state = state

    def round(self, messages, round=None):
        body = {"messages": list(messages)}
        if round is not None:
            body["round"] = int(round)
        return self.client._call("POST", "/v1/debates/%s/rounds" % self.id, body)

    def get(self):
        return self.client._call("GET", "/v1/debates/%s" % self.id)

    def delete(self):
        self.client._call("DELETE", "/v1/debates/%s" % self.id)
