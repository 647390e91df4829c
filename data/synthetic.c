/* data/synthetic.c: the built-in `synthetic` dataset: seeded multiple-choice
** questions from a small table of facts and definitions, each with plausible distractors of
** the same type, and arithmetic word problems with worked solutions. Every item carries its
** gold explanation, so the whole pipeline runs with no download.
**
** Item i is generated from sn_seed_derive(seed, "synthetic", i) alone: asking for more items
** never changes the earlier ones. Its id, "<name>-mc-00012-<hash>", ends with 8 hex digits of a
** hash of the question text, options and gold (item_hash): two seeds that draw different
** questions at the same index never share an id, so metrics keyed by item (docs/formats.md
** "Adversary-effective filtering") never merge different questions. */
#include "data/data_internal.h"

#include <string.h>

struct fact {
    const char *subject, *question, *answer, *distractors[3], *explanation;
};

static const struct fact facts[] = {
    {"geography", "Which river flows through Cairo?", "Nile", {"Danube", "Amazon", "Volga"},
     "Cairo lies on the banks of the Nile, the river that runs north through Egypt to the "
     "Mediterranean."},
    {"geography", "What is the capital of Australia?", "Canberra",
     {"Sydney", "Melbourne", "Perth"},
     "Canberra was purpose-built as the capital; Sydney and Melbourne are larger but are not "
     "the seat of government."},
    {"geography", "Which is the largest ocean on Earth?", "Pacific Ocean",
     {"Atlantic Ocean", "Indian Ocean", "Arctic Ocean"},
     "The Pacific Ocean covers about a third of Earth's surface, more than any other ocean."},
    {"geography", "On which continent is the Atacama Desert?", "South America",
     {"Africa", "Asia", "Australia"},
     "The Atacama stretches along the Pacific coast of Chile, in South America."},
    {"geography", "Which country has the city of Kyoto?", "Japan",
     {"China", "South Korea", "Vietnam"},
     "Kyoto, the former imperial capital of Japan, lies on the island of Honshu."},
    {"geography", "What is the highest mountain above sea level?", "Mount Everest",
     {"K2", "Kangchenjunga", "Mont Blanc"},
     "Mount Everest rises about 8,849 m above sea level, higher than K2 (8,611 m)."},
    {"science", "What is the chemical symbol for sodium?", "Na", {"So", "Sd", "S"},
     "Sodium's symbol Na comes from its Latin name natrium."},
    {"science", "Which planet is closest to the Sun?", "Mercury", {"Venus", "Mars", "Earth"},
     "Mercury orbits at about 0.39 AU, closer to the Sun than any other planet."},
    {"science", "What gas do plants absorb from the air for photosynthesis?", "Carbon dioxide",
     {"Oxygen", "Nitrogen", "Hydrogen"},
     "Photosynthesis fixes carbon dioxide into sugars and releases oxygen."},
    {"science", "What is the boiling point of water at sea level in degrees Celsius?", "100",
     {"90", "120", "80"},
     "At one atmosphere of pressure pure water boils at 100 degrees Celsius."},
    {"science", "Which particle carries a negative electric charge?", "Electron",
     {"Proton", "Neutron", "Photon"},
     "Electrons carry a negative charge; protons are positive and neutrons neutral."},
    {"science", "What is the hardest natural mineral?", "Diamond",
     {"Quartz", "Topaz", "Corundum"},
     "Diamond tops the Mohs scale at 10; corundum is 9 and topaz 8."},
    {"science", "Which organ pumps blood through the human body?", "Heart",
     {"Liver", "Lungs", "Kidney"},
     "The heart's contractions drive blood through the arteries and veins."},
    {"science", "How many chromosomes does a typical human body cell contain?", "46",
     {"23", "44", "48"},
     "Human somatic cells are diploid with 23 pairs, that is 46 chromosomes."},
    {"history", "In which year did the Berlin Wall fall?", "1989", {"1991", "1985", "1979"},
     "The border crossings in Berlin opened on 9 November 1989."},
    {"history", "Who was the first person to walk on the Moon?", "Neil Armstrong",
     {"Buzz Aldrin", "Yuri Gagarin", "John Glenn"},
     "Neil Armstrong stepped onto the Moon first during Apollo 11 in 1969; Aldrin followed."},
    {"history", "Which empire built Machu Picchu?", "The Inca Empire",
     {"The Aztec Empire", "The Maya civilisation", "The Roman Empire"},
     "Machu Picchu was built by the Inca Empire in the 15th century as an estate of the "
     "emperor Pachacuti."},
    {"history", "Which document was sealed at Runnymede in 1215?", "Magna Carta",
     {"The Bill of Rights", "The Domesday Book", "The Treaty of Westphalia"},
     "King John sealed Magna Carta at Runnymede in June 1215."},
    {"literature", "Who wrote 'Pride and Prejudice'?", "Jane Austen",
     {"Charlotte Bronte", "Mary Shelley", "George Eliot"},
     "Pride and Prejudice was published in 1813 by Jane Austen."},
    {"literature", "Who wrote the play 'Hamlet'?", "William Shakespeare",
     {"Christopher Marlowe", "Ben Jonson", "John Milton"},
     "Hamlet is a tragedy by William Shakespeare, written around 1600."},
    {"mathematics", "What is the smallest prime number?", "2", {"1", "3", "0"},
     "A prime has exactly two divisors; 1 has only one, so the smallest prime is 2."},
    {"mathematics", "How many degrees are in the interior angles of a triangle?", "180",
     {"360", "90", "270"},
     "In Euclidean geometry the interior angles of any triangle sum to 180 degrees."},
    {"mathematics", "What is the square root of 144?", "12", {"14", "11", "16"},
     "12 times 12 is 144, so the square root of 144 is 12."},
    {"definitions", "Which term describes an animal that eats only plants?", "Herbivore",
     {"Carnivore", "Omnivore", "Detritivore"},
     "A herbivore feeds on plants; carnivores eat animals and omnivores eat both."},
    {"definitions", "Which term names a word that means the opposite of another word?",
     "Antonym", {"Synonym", "Homonym", "Acronym"},
     "An antonym has the opposite meaning; a synonym has the same meaning."},
    {"definitions", "What do we call the process by which water vapour becomes liquid?",
     "Condensation", {"Evaporation", "Sublimation", "Precipitation"},
     "Condensation turns vapour into liquid; evaporation is the reverse."},
    {"definitions", "Which term describes a polygon with eight sides?", "Octagon",
     {"Hexagon", "Heptagon", "Decagon"},
     "An octagon has eight sides; a hexagon has six and a heptagon seven."},
    {"definitions", "In economics, what is the term for a general rise in prices over time?",
     "Inflation", {"Deflation", "Recession", "Stagnation"},
     "Inflation is a sustained increase in the general price level."},
    {"definitions", "What is the name for a scientist who studies fossils?", "Paleontologist",
     {"Archaeologist", "Geologist", "Anthropologist"},
     "Paleontologists study fossils of ancient life; archaeologists study human artefacts."},
    {"definitions", "Which term names the basic unit of heredity?", "Gene",
     {"Cell", "Protein", "Ribosome"},
     "A gene is a stretch of DNA that carries the information for one heritable trait."},
};
enum { N_FACTS = sizeof facts / sizeof facts[0] };

/* Arithmetic word problems: each template draws its numbers, then writes the question, the
** worked solution and the answer. */
struct wp {
    char   question[512];
    char   solution[768];
    double answer;
};

static const char *const names[] = {"Maya", "Tom", "Aisha", "Lukas", "Priya", "Diego", "Sofia",
                                    "Kenji", "Amara", "Oliver"};

static void word_problem(struct sn_rng *rng, struct wp *w)
{
    const char *who = names[sn_rng_below(rng, sizeof names / sizeof names[0])];
    long a, b, c, d;
    switch (sn_rng_below(rng, 8)) {
    case 0:
        a = 3 + (long)sn_rng_below(rng, 10);
        b = 6 + (long)sn_rng_below(rng, 20);
        c = 1 + (long)sn_rng_below(rng, (uint64_t)(a * b / 2));
        snprintf(w->question, sizeof w->question,
                 "%s bakes %ld trays of cookies with %ld cookies on each tray and sells %ld "
                 "cookies. How many cookies are left?", who, a, b, c);
        snprintf(w->solution, sizeof w->solution,
                 "%s bakes %ld x %ld = %ld cookies. After selling %ld, %ld - %ld = %ld cookies "
                 "are left.", who, a, b, a * b, c, a * b, c, a * b - c);
        w->answer = (double)(a * b - c);
        break;
    case 1:
        a = 12 + (long)sn_rng_below(rng, 40);
        b = 2 + (long)sn_rng_below(rng, 8);
        snprintf(w->question, sizeof w->question,
                 "A train travels at %ld km per hour for %ld hours. How many kilometres does it "
                 "travel?", a * 5, b);
        snprintf(w->solution, sizeof w->solution,
                 "Distance = speed x time = %ld x %ld = %ld km.", a * 5, b, a * 5 * b);
        w->answer = (double)(a * 5 * b);
        break;
    case 2:
        a = 4 + (long)sn_rng_below(rng, 12);
        b = 2 + (long)sn_rng_below(rng, 5);
        c = 5 + (long)sn_rng_below(rng, 30);
        snprintf(w->question, sizeof w->question,
                 "%s buys %ld notebooks at $%ld each and pays with a $%ld bill. How much change, "
                 "in dollars, does %s get?", who, b, a, a * b + c, who);
        snprintf(w->solution, sizeof w->solution,
                 "The notebooks cost %ld x $%ld = $%ld. The change is $%ld - $%ld = $%ld.", b, a,
                 a * b, a * b + c, a * b, c);
        w->answer = (double)c;
        break;
    case 3:
        a = 2 + (long)sn_rng_below(rng, 9);
        b = 3 + (long)sn_rng_below(rng, 9);
        d = a * b * (2 + (long)sn_rng_below(rng, 4));
        snprintf(w->question, sizeof w->question,
                 "A garden has %ld rows of %ld tulips. If %s plants %ld more tulips, how many "
                 "tulips are in the garden?", a, b, who, d);
        snprintf(w->solution, sizeof w->solution,
                 "There are %ld x %ld = %ld tulips at first, and %ld + %ld = %ld after planting.",
                 a, b, a * b, a * b, d, a * b + d);
        w->answer = (double)(a * b + d);
        break;
    case 4:
        a = 2 + (long)sn_rng_below(rng, 6);
        b = a * (3 + (long)sn_rng_below(rng, 20));
        snprintf(w->question, sizeof w->question,
                 "%s shares %ld marbles equally among %ld friends. How many marbles does each "
                 "friend get?", who, b, a);
        snprintf(w->solution, sizeof w->solution, "Each friend gets %ld / %ld = %ld marbles.", b,
                 a, b / a);
        w->answer = (double)(b / a);
        break;
    case 5:
        a = 20 + (long)sn_rng_below(rng, 180);
        b = 10 * (1 + (long)sn_rng_below(rng, 5));
        snprintf(w->question, sizeof w->question,
                 "A jacket costs $%ld. It is on sale for %ld%% off. What is the sale price in "
                 "dollars?", a * 10, b);
        snprintf(w->solution, sizeof w->solution,
                 "The discount is %ld%% of $%ld = $%ld, so the sale price is $%ld - $%ld = $%ld.",
                 b, a * 10, a * b / 10, a * 10, a * b / 10, a * 10 - a * b / 10);
        w->answer = (double)(a * 10 - a * b / 10);
        break;
    case 6:
        a = 3 + (long)sn_rng_below(rng, 15);
        b = 2 + (long)sn_rng_below(rng, 4);
        c = 1 + (long)sn_rng_below(rng, 10);
        snprintf(w->question, sizeof w->question,
                 "%s is %ld years old. Their mother is %ld times as old plus %ld years. How old "
                 "is the mother?", who, a + 5, b, c);
        snprintf(w->solution, sizeof w->solution,
                 "%ld x %ld = %ld, and %ld + %ld = %ld years.", a + 5, b, (a + 5) * b,
                 (a + 5) * b, c, (a + 5) * b + c);
        w->answer = (double)((a + 5) * b + c);
        break;
    default:
        a = 2 + (long)sn_rng_below(rng, 8);
        b = 100 + 25 * (long)sn_rng_below(rng, 20);
        snprintf(w->question, sizeof w->question,
                 "A recipe needs %ld grams of flour per loaf. How many grams of flour are needed "
                 "for %ld loaves, plus half a loaf extra?", b, a);
        snprintf(w->solution, sizeof w->solution,
                 "%ld loaves need %ld x %ld = %ld g; half a loaf needs %ld / 2 = %g g; in total "
                 "%g g.", a, a, b, a * b, b, b / 2.0, (double)(a * b) + b / 2.0);
        w->answer = (double)(a * b) + b / 2.0;
        break;
    }
}

/* 32 bits of FNV-style hashing over question, options and gold, separated by 0x1f. */
static uint32_t item_hash(const char *question, const char *const *opts, size_t n_opts,
                          const char *gold)
{
    uint64_t h = sn_hash64(question, strlen(question));
    for (size_t j = 0; j < n_opts; j++)
        h = sn_seed_derive(h, opts[j], j);
    h = sn_seed_derive(h, gold, n_opts);
    return (uint32_t)(h ^ (h >> 32));
}

int sn_synthetic_generate(struct sn_qset *qs, size_t n, uint64_t seed, double numeric_share,
                          const char *name, struct sn_err *err)
{
    for (size_t i = 0; i < n; i++) {
        struct sn_rng rng;
        sn_rng_seed(&rng, sn_seed_derive(seed, "synthetic", i));
        bool numeric = sn_rng_uniform(&rng) < numeric_share;
        char id[128], gold[SN_ANSWER_MAX];
        int rc;
        if (numeric) {
            struct wp w;
            word_problem(&rng, &w);
            sn_format_number(w.answer, gold);
            snprintf(id, sizeof id, "%s-num-%05zu-%08x", name, i,
                     (unsigned)item_hash(w.question, NULL, 0, gold));
            char expl[900];
            snprintf(expl, sizeof expl, "%s The answer is %s.", w.solution, gold);
            struct sn_question q = {.id = id, .dataset = (char *)name, .subject =
                                    (char *)"arithmetic", .task = SN_TASK_NUMERIC,
                                    .question = w.question, .gold = gold,
                                    .gold_explanation = expl};
            rc = sn_qset_push(qs, &q, err);
        } else {
            const struct fact *f = &facts[sn_rng_below(&rng, N_FACTS)];
            const char *opts[4] = {f->answer, f->distractors[0], f->distractors[1],
                                   f->distractors[2]};
            sn_mc_shuffle_options(&rng, opts, gold);
            snprintf(id, sizeof id, "%s-mc-%05zu-%08x", name, i,
                     (unsigned)item_hash(f->question, opts, 4, gold));
            struct sn_question q = {.id = id, .dataset = (char *)name,
                                    .subject = (char *)f->subject, .task = SN_TASK_MC,
                                    .question = (char *)f->question, .options = (char **)opts,
                                    .n_options = 4, .gold = gold,
                                    .gold_explanation = (char *)f->explanation};
            rc = sn_qset_push(qs, &q, err);
        }
        if (rc)
            return rc;
    }
    return SN_OK;
}
