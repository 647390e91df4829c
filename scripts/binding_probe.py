#!/usr/bin/env python3
"""scripts/binding_probe.py: does a small decoder learn the facts of the `facts` world from the
tuples a build wrote? A diagnostic in PyTorch, outside the product (docs/eval.md "Content, not
wording", "What the detector does not learn").

    /usr/bin/python3 scripts/binding_probe.py --shards OUT/shards [--only contrast]
        [--dataset facts-known] [--no-context] [--d 64 --layers 2] [--steps 2000]
        [--textbook IDS --lm-steps N] [--bare-share 0.5]

It trains a reward model of the `tiny` shape (pre-norm decoder, RoPE, SwiGLU, the reward read
at the last token, L_pref only; docs/design.md §4) on the train split's (chosen, rejected) ids,
optionally only on the pairs of one `rejected_kind` and dataset, optionally with every sequence
cut to its response (from the last <|im_start|>: the question and the discussion removed), and
prints the validation split's pair accuracy (chosen scored above rejected) by rejected kind and
dataset, the facts' pairs split by whether their explanation sentence (the reference's first
line) occurs in any train tuple (`seen`) or not (`unseen`). With --textbook (a file of
token-id lines, e.g. the train split's reference sentences through `sentinel tokenize --json`)
the model is first trained --lm-steps steps as a language model on those lines (the head tied to
the embedding), then as the reward model (docs/eval.md "A textbook first does not help"). With
--bare-share F a share F of the training pairs is cut to their responses while validation keeps
the whole sequences: does binding learnt on short sequences carry over to scoring in context? A fact-binding learner scores a
contrast pair (the same text with the fact's object swapped for another fact's object) right
on seen and unseen sentences alike; a learner of names scores the unseen ones below chance,
since a distractor is the right object of another fact. Needs h5py and torch (Debian's
python3-h5py, python3-torch). Not run by the suite: its figures are documented, not asserted."""
import argparse, collections, glob, math, time
import h5py, numpy as np, torch, torch.nn as nn, torch.nn.functional as F

IM_START = 510   # <|im_start|> in the demo tokenizer (docs/formats.md "Token sequences")


def parse():
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--shards', required=True, help='a build output directory')
    p.add_argument('--steps', type=int, default=2000)
    p.add_argument('--batch', type=int, default=8, help='pairs per step')
    p.add_argument('--lr', type=float, default=1e-3, help='peak (60 warmup steps, cosine)')
    p.add_argument('--d', type=int, default=64)
    p.add_argument('--layers', type=int, default=2)
    p.add_argument('--heads', type=int, default=4)
    p.add_argument('--only', default='', help='train on this rejected_kind only')
    p.add_argument('--dataset', default='', help='train on this dataset only')
    p.add_argument('--no-context', action='store_true', help='keep the response only')
    p.add_argument('--eval-every', type=int, default=500)
    p.add_argument('--threads', type=int, default=1)
    p.add_argument('--seed', type=int, default=0)
    p.add_argument('--textbook', default='',
                   help='a file of token-id lines (`sentinel tokenize`): language-model '
                        'pretraining on them before the reward training')
    p.add_argument('--lm-steps', type=int, default=0)
    p.add_argument('--lm-batch', type=int, default=32)
    p.add_argument('--bare-share', type=float, default=0.0,
                   help='train on this share of pairs cut to their responses (validation keeps '
                        'the whole sequences unless --no-context)')
    return p.parse_args()


def bare(seq):
    """a sequence cut to its response: from its last <|im_start|>"""
    starts = np.where(seq == IM_START)[0]
    return seq[starts[-1]:] if len(starts) else seq


def load(args, split):
    pairs = []
    for fn in sorted(glob.glob(f'{args.shards}/{split}-*.h5')):
        with h5py.File(fn) as f:
            ids = {k: f['ids/' + k][:] for k in ('chosen', 'rejected')}
            off = {k: f['offsets/' + k][:] for k in ('chosen', 'rejected')}
            kind = [x.decode() for x in f['meta/rejected_kind'][:]]
            dataset = [x.decode() for x in f['meta/dataset'][:]]
            fact = [x.decode().split('\n')[0] for x in f['text/reference'][:]]
        for i in range(len(kind)):
            seq = [ids[k][off[k][i]:off[k][i + 1]] for k in ('chosen', 'rejected')]
            if args.no_context:
                seq = [bare(s) for s in seq]
            pairs.append((seq[0], seq[1], kind[i], dataset[i], fact[i]))
    return pairs


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d, bias=False)
        self.gate = nn.Linear(d, 4 * d, bias=False)
        self.up = nn.Linear(d, 4 * d, bias=False)
        self.down = nn.Linear(4 * d, d, bias=False)

    def forward(self, x, cos, sin, mask):
        B, T, D = x.shape
        H, Dh = self.heads, D // self.heads
        q, k, v = self.qkv(self.norm1(x)).view(B, T, 3, H, Dh).permute(2, 0, 3, 1, 4)

        def rope(t):
            a, b = t[..., :Dh // 2], t[..., Dh // 2:]
            return torch.cat([a * cos - b * sin, b * cos + a * sin], -1)
        att = rope(q) @ rope(k).transpose(-1, -2) / math.sqrt(Dh) + mask
        x = x + self.out((att.softmax(-1) @ v).transpose(1, 2).reshape(B, T, D))
        h = self.norm2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class RewardModel(nn.Module):
    def __init__(self, vocab, d, layers, heads):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, 1, bias=False)
        self.dh = d // heads

    def hidden(self, ids):
        """the final norm's output, (batch, time, d)"""
        T = ids.shape[1]
        inv = 1.0 / 10000 ** (torch.arange(self.dh // 2).float() / (self.dh // 2))
        ang = torch.arange(T).float()[:, None] * inv[None]
        mask = torch.full((T, T), float('-inf')).triu(1)
        x = self.embed(ids)
        for b in self.blocks:
            x = b(x, ang.cos(), ang.sin(), mask)
        return self.norm(x)

    def forward(self, ids, lens):
        return self.head(self.hidden(ids)[torch.arange(ids.shape[0]), lens - 1]).squeeze(-1)

    def lm_loss(self, ids, lens):
        B, T = ids.shape
        logits = self.hidden(ids) @ self.embed.weight.T
        valid = torch.arange(T)[None, :-1] < (lens[:, None] - 1)
        nll = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]),
                              ids[:, 1:].reshape(-1), reduction='none').view(B, T - 1)
        return (nll * valid).sum() / valid.sum()


def batch(pairs):
    seqs = [p[0] for p in pairs] + [p[1] for p in pairs]
    ids = torch.zeros(len(seqs), max(len(s) for s in seqs), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, :len(s)] = torch.from_numpy(s.astype(np.int64))
    return ids, torch.tensor([len(s) for s in seqs])


def optimizer_step(model, opt, loss, peak, step, steps):
    """one AdamW step at the schedule's rate (60 warmup steps, then cosine), clipped at 1"""
    lr = peak * ((step + 1) / 60 if step < 60 else
                 0.5 * (1 + math.cos(math.pi * (step - 60) / max(1, steps - 60))))
    for g in opt.param_groups:
        g['lr'] = lr
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()


def main():
    args = parse()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    train, val = load(args, 'train'), load(args, 'validation')
    train = [p for p in train if (not args.only or p[2] == args.only) and
             (not args.dataset or p[3] == args.dataset)]
    if not train:
        raise SystemExit('binding_probe: no train pairs left after --only/--dataset')
    seen = {p[4] for p in train}
    vocab = int(max(max(p[0].max(), p[1].max()) for p in train + val)) + 1
    print('train pairs', len(train), collections.Counter((p[2], p[3]) for p in train).most_common(8))
    model = RewardModel(vocab, args.d, args.layers, args.heads)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.0)

    def evaluate():
        model.eval()
        hits = collections.defaultdict(lambda: [0, 0])
        with torch.no_grad():
            for i in range(0, len(val), 32):
                part = val[i:i + 32]
                r = model(*batch(part))
                for j, p in enumerate(part):
                    ok = float(r[j] > r[len(part) + j])
                    sub = p[2] + '/' + p[3]
                    for key in ('all', p[2], sub, sub + ('/seen' if p[4] in seen else '/unseen')):
                        hits[key][0] += ok
                        hits[key][1] += 1
        model.train()
        return {k: f'{v[0] / v[1]:.3f} ({v[1]})' for k, v in sorted(hits.items()) if v[1] >= 20}

    if args.textbook and args.lm_steps:
        book = [np.array([int(t) for t in line.split()], dtype=np.int64)
                for line in open(args.textbook) if len(line.split()) >= 2]
        lm_opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.0)
        t0 = time.time()
        for step in range(args.lm_steps):
            part = [book[j] for j in rng.integers(0, len(book), args.lm_batch)]
            ids, lens = batch([(s, s[:1], '', '', '') for s in part])
            ids, lens = ids[:len(part)], lens[:len(part)]
            loss = model.lm_loss(ids, lens)
            optimizer_step(model, lm_opt, loss, args.lr, step, args.lm_steps)
            if (step + 1) % 500 == 0 or step + 1 == args.lm_steps:
                print(f'lm step {step + 1}: loss {float(loss):.3f}, {time.time() - t0:.0f} s',
                      flush=True)
    t0, order, pos, accs = time.time(), rng.permutation(len(train)), 0, []
    for step in range(args.steps):
        if pos + args.batch > len(order):
            order, pos = rng.permutation(len(train)), 0
        part = [train[j] for j in order[pos:pos + args.batch]]
        if args.bare_share > 0:
            part = [(bare(p[0]), bare(p[1])) + p[2:] if rng.random() < args.bare_share else p
                    for p in part]
        pos += args.batch
        r = model(*batch(part))
        n = len(part)
        loss = -F.logsigmoid(r[:n] - r[n:]).mean()
        optimizer_step(model, opt, loss, args.lr, step, args.steps)
        accs.append(float((r[:n] > r[n:]).float().mean()))
        if (step + 1) % args.eval_every == 0 or step + 1 == args.steps:
            print(f'step {step + 1}: train accuracy (last 200 steps) {np.mean(accs[-200:]):.3f}, '
                  f'{time.time() - t0:.0f} s; validation pair accuracy:', flush=True)
            for k, v in evaluate().items():
                print(f'  {k:40s} {v}')


if __name__ == '__main__':
    main()
