"""Deterministic generator of the SYNTHETIC demo dataset shipped in ``data/demo/``.

Nothing here comes from the study of Li, Herderich, Nair & Goldenberg (2025).
The files imitate the *shape* of a plausible OSF export (several studies, each
with its own column names) and carry planted structure that the pipeline is
expected to recover:

* a latent reappraisal quality driven by textual features (second person,
  scenario-specific detail, an alternative interpretation, brevity) plus noise;
* four rating dimensions loading on that quality (effectiveness most strongly);
* a per-rater severity offset shared across the four dimensions;
* per-study scale differences (multiplier and offset around the scale centre);
* two raters who give a constant novelty rating (zero variance).

``python -m reappraisal.data.demo_generator --out data/demo`` rebuilds the
committed files bit-for-bit: all randomness comes from one
``numpy.random.Generator`` seeded explicitly, iteration is over lists/tuples
only (never over sets or hash-ordered data), floats are written with a fixed
format, and files are UTF-8 with ``\\n`` line endings.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from reappraisal.atomic import atomic_path

DEFAULT_SEED = 20250101
DATA_ORIGIN = "SYNTHETIC demo data - not from the study"

DIMENSIONS = ("effectiveness", "empathy", "novelty", "specificity")
# Loading of each dimension's latent score on the standardized quality; the
# remainder (sqrt(1 - a^2)) is reappraisal-specific, dimension-specific noise.
DIMENSION_LOADINGS = {"effectiveness": 0.90, "empathy": 0.70, "novelty": 0.45, "specificity": 0.60}

SCALE_MIN, SCALE_MAX, SCALE_CENTER = 1, 7, 4.0
RATER_SEVERITY_SD = 0.8
RATING_NOISE_SD = 0.7


@dataclass(frozen=True)
class StudySpec:
    name: str  # e.g. "study1" (file prefix)
    label: str  # study label used in truth/ and in the ingest mapping of config.yaml, e.g. "1"
    prefix: str  # id prefix, e.g. "s1"
    n_per_vignette: int  # human reappraisals per training vignette
    multiplier: float  # scale multiplier applied to the latent dimension score
    offset: float  # shift of the study's ratings around the scale centre
    reappraisal_file: str
    reappraisal_columns: tuple[str, str, str]  # (id, vignette, text)
    rating_file: str
    rating_columns: tuple[str, str, str, str, str, str]  # (rater, id, eff, emp, nov, spec)


STUDIES = (
    StudySpec(
        "study1", "1", "s1", 34, 1.00, 0.00,
        "study1_reappraisals.csv", ("reappraisal_id", "vignette_id", "response"),
        "study1_ratings.csv",
        ("rater", "reappraisal_id", "effectiveness", "empathy", "novelty", "specificity"),
    ),
    StudySpec(
        "study3", "3", "s3", 32, 0.70, 0.50,
        "study3_reappraisals.csv", ("rid", "scenario", "reappraisal_text"),
        "study3_ratings.csv",
        ("participant", "rid", "eff", "emp", "nov", "spec"),
    ),
    StudySpec(
        "study4", "4", "s4", 34, 1.15, -0.30,
        "study4_reappraisals.csv", ("reappraisal_id", "vignette_id", "response"),
        "study4_ratings.csv",
        ("rater", "reappraisal_id", "effectiveness", "empathy", "novelty", "specificity"),
    ),
)

# Raters who give the same novelty rating to everything they rate (zero
# variance on that dimension), to exercise the pipeline's zero-variance path.
CONSTANT_RATERS = (
    ("3", "s3_p004", "novelty", 4),
    ("4", "s4_p009", "novelty", 5),
)

RATINGS_PER_ITEM = (8, 12)  # inclusive range of ratings per reappraisal
ITEMS_PER_RATER = (20, 40)  # inclusive range of reappraisals per rater
TARGET_ITEMS_PER_RATER = 30

OPPONENT_MODELS = ("deepseek-r1", "qwen2.5-72b")
GPT4_MODEL = "gpt-4-0314"

# Latent quality (before standardization) = sum of these feature weights + noise.
QUALITY_WEIGHTS = {
    "second_person": 0.90,
    "specific_hits": 0.45,  # per distinct scenario keyword, capped at SPECIFIC_CAP
    "alternative": 1.00,
    "extra_sentences": -0.60,  # per sentence beyond two
}
SPECIFIC_CAP = 3
QUALITY_NOISE_SD = 0.5


# --------------------------------------------------------------------------
# Scenario content (all written for this demo)
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Vignette:
    vignette_id: str
    emotion: str
    text: str
    pool: str
    keywords: tuple[str, ...] = ()
    # human phrase banks (training scenarios only)
    name: str = ""
    specific_alts: tuple[str, ...] = ()
    specific_coping: tuple[str, ...] = ()
    gpt4: tuple[str, ...] = ()
    # opponent answer material (every scenario)
    opp_ref: str = ""
    opp_detail: str = ""
    opp_alts: tuple[str, str] = ("", "")


TRAIN_VIGNETTES = (
    Vignette(
        "v01", "sadness",
        "You organized a small dinner for your birthday and invited your closest friend, Jordan. "
        "Jordan never showed up and did not answer your messages that evening. "
        "The next morning you saw photos of Jordan at a concert with other friends.",
        "train",
        keywords=("jordan", "birthday", "dinner", "messages", "concert", "photos"),
        name="Jordan",
        specific_alts=(
            "got pulled into the concert at the last minute and forgot about the dinner",
            "mixed up the date of the birthday dinner",
            "had a dead phone and never saw the messages",
            "felt awkward about missing the dinner and did not know how to reply to the messages",
            "went to the concert because someone else needed support that night",
            "thought the birthday dinner was on a different night",
            "had a hard week and the concert photos do not show the whole story",
            "planned to make up for the birthday with a surprise later",
        ),
        specific_coping=(
            "One missed birthday dinner does not erase years of friendship with Jordan.",
            "{Sc} can ask Jordan about the dinner directly instead of reading into the photos.",
            "The photos from the concert only show a few seconds of Jordan's night.",
            "{Sc} still had a birthday dinner with people who showed up for {O}.",
            "{Sc} can tell Jordan honestly that the empty seat at dinner hurt.",
        ),
        gpt4=(
            "Perhaps Jordan got swept up in last-minute concert plans and then felt too embarrassed "
            "about skipping your birthday dinner to answer your messages. Their silence likely says "
            "more about their guilt than about how much you matter to them.",
            "It could be that Jordan double-booked the evening and handled it poorly, which would hurt "
            "but would not mean your friendship is worthless. You can ask them what happened before "
            "deciding what the photos mean.",
        ),
        opp_ref="Jordan",
        opp_detail="the missed birthday dinner",
        opp_alts=(
            "ended up at the concert through a chain of last-minute decisions",
            "is avoiding you out of embarrassment rather than indifference",
        ),
    ),
    Vignette(
        "v02", "anger",
        "Your coworker Priya presented the project plan you spent two weeks drafting as her own work "
        "in the team meeting. When your manager praised the plan, Priya did not mention your name. "
        "You sat there and said nothing.",
        "train",
        keywords=("priya", "project", "plan", "meeting", "manager", "coworker", "drafting", "drafted", "weeks"),
        name="Priya",
        specific_alts=(
            "did not realize how much of the project plan came from the drafts",
            "panicked in front of the manager and spoke without thinking",
            "assumed the plan was shared team work and that everyone knew who drafted it",
            "meant to credit the drafting work but lost track once the manager started asking questions",
            "felt pressure from the manager to show results on the project",
            "planned to mention the drafting work in the meeting notes afterwards",
            "got nervous presenting to the whole meeting and forgot to give credit",
        ),
        specific_coping=(
            "{Sc} can send the manager a short note about who drafted the project plan.",
            "The manager liked the plan, which means those two weeks of work were good.",
            "{Sc} can talk to Priya privately before the next meeting.",
            "Next time {S} can present {P} own part of the project in the meeting.",
            "One meeting does not decide how the manager sees {P} work.",
        ),
        gpt4=(
            "Perhaps Priya froze when your manager praised the plan and did not know how to share credit "
            "gracefully in the moment. You can calmly set the record straight with your manager, knowing "
            "the quality of your drafting is exactly why the plan was praised.",
            "It could be that Priya genuinely thinks of the project plan as joint work and did not notice "
            "she left your name out. Your two weeks of drafting produced something your manager admired, "
            "and that skill is yours to keep.",
            "Maybe Priya is under pressure to look productive and grabbed the spotlight without thinking "
            "about you. You can raise it with her directly, and a short follow-up email to your manager "
            "can make your contribution visible.",
        ),
        opp_ref="Priya",
        opp_detail="the credit for your plan",
        opp_alts=(
            "blanked under the manager's attention and fell back on saying we",
            "sees collaborative documents as collective property",
        ),
    ),
    Vignette(
        "v03", "fear",
        "I texted my partner, Alex, three times this afternoon and got no reply. Alex usually answers "
        "within minutes, and last night we had an argument about moving in together. I keep imagining "
        "that Alex is about to end our relationship.",
        "train",
        keywords=("alex", "texted", "texts", "reply", "argument", "moving", "relationship", "partner", "afternoon"),
        name="Alex",
        specific_alts=(
            "is stuck in a long afternoon at work and has not looked at the texts",
            "needs a little time to think after the argument and will reply later",
            "wants to answer carefully instead of sending a rushed reply",
            "left the phone at home this afternoon",
            "is also nervous about moving in together and is sorting out those feelings",
            "took the argument as a normal disagreement, not the end of the relationship",
            "is busy and the silence has nothing to do with the relationship",
        ),
        specific_coping=(
            "One argument about moving in together does not mean the relationship is over.",
            "A few unanswered texts in one afternoon are not proof of anything.",
            "{Sc} can wait for Alex to reply and then talk about the argument calmly.",
            "Couples argue about moving in together all the time and stay together.",
            "{Sc} can tell Alex that the argument left {O} anxious.",
        ),
        gpt4=(
            "Perhaps Alex is simply busy this afternoon or is taking time to reflect after last night's "
            "argument about moving in. One disagreement and a few unanswered texts are a normal part of a "
            "relationship, not a sign that you are about to lose Alex.",
            "It could be that Alex wants to reply thoughtfully rather than quickly because the argument "
            "mattered to them too. Their silence for a few hours does not mean they are leaving you.",
        ),
        opp_ref="Alex",
        opp_detail="the silence this afternoon",
        opp_alts=(
            "is caught up at work and plans to respond tonight",
            "is processing the conversation and wants to answer with care",
        ),
    ),
    Vignette(
        "v04", "sadness",
        "My sister Dana announced at the family lunch that she is moving abroad for a new job. Everyone "
        "else already knew, and I found out at the same time as our cousins. It felt like I no longer "
        "matter to her.",
        "train",
        keywords=("dana", "sister", "lunch", "family", "moving", "move", "abroad", "job", "cousins"),
        name="Dana",
        specific_alts=(
            "was afraid to tell the closest people first because their reaction mattered most",
            "told the others by accident and then did not know how to bring it up",
            "wanted to tell everyone at the family lunch so nobody would feel left out",
            "was still unsure about the job until the last moment",
            "worried that telling a sibling first would make leaving feel too real",
            "assumed someone else in the family had already passed on the news",
            "felt guilty about moving abroad and kept avoiding the conversation",
        ),
        specific_coping=(
            "Dana moving abroad does not change that she is {P} sister.",
            "{Sc} can call Dana and say that finding out at lunch hurt.",
            "The way the news came out at lunch says little about how much Dana cares.",
            "{Sc} can plan a visit to Dana after the move.",
            "Sisters stay close across countries all the time.",
        ),
        gpt4=(
            "Perhaps Dana struggled to tell you first because your reaction matters so much to her that it "
            "made the move feel scarier. Finding out at the family lunch hurt, but it does not mean you "
            "matter less to your sister.",
        ),
        opp_ref="Dana",
        opp_detail="hearing the news at the family lunch",
        opp_alts=(
            "dreaded your reaction because you are so close",
            "wanted one announcement so that no relative felt ranked",
        ),
    ),
    Vignette(
        "v05", "anger",
        "Your downstairs neighbor, Tomas, complained to the building manager about loud music from your "
        "apartment, even though you were away that whole weekend. The manager sent you a formal warning "
        "letter. Now Tomas looks away when you pass him in the hallway.",
        "train",
        keywords=("tomas", "neighbor", "manager", "music", "apartment", "weekend", "warning", "letter", "hallway", "building"),
        name="Tomas",
        specific_alts=(
            "heard music from a different apartment and guessed wrong",
            "had a terrible weekend and the noise pushed him over the edge",
            "feels embarrassed now and avoids the hallway conversation for that reason",
            "did not expect the manager to send a formal warning letter",
            "cannot tell which apartment the sound comes from because of how the building carries noise",
            "has been losing sleep and just wanted the music to stop",
        ),
        specific_coping=(
            "{Sc} can show the manager that {S} {WAS} away that weekend.",
            "A warning letter for something {S} did not do can be cleared up.",
            "{Sc} can knock on Tomas's door and explain calmly.",
            "The letter is a mistake about the building, not about {P} character.",
            "Tomas looking away in the hallway is not worth a fight.",
        ),
        gpt4=(
            "Maybe Tomas heard music from another unit and honestly believed it came from your apartment. "
            "You can calmly share that you were away that weekend, and the warning letter can be corrected.",
            "Perhaps Tomas avoids you in the hallway because he now suspects he made a mistake and feels "
            "awkward about it. You can clear things up with the building manager and give him a chance to "
            "reset the relationship.",
            "It could be that Tomas had a sleepless weekend and complained in frustration without checking "
            "who was home. That is his error, not a judgment of you, and a friendly word in the hallway may "
            "ease the tension.",
        ),
        opp_ref="Tomas",
        opp_detail="the warning letter",
        opp_alts=(
            "misjudged where the sound came from in an old building",
            "is now unsure of himself and keeps his distance",
        ),
    ),
    Vignette(
        "v06", "fear",
        "You have to give a toast at your best friend Sam's wedding next week in front of two hundred "
        "guests. At the rehearsal, Sam's mother said loudly that she hopes your speech will not embarrass "
        "the family. Since then you have been dreading the day.",
        "train",
        keywords=("sam", "wedding", "toast", "speech", "rehearsal", "mother", "guests"),
        name="Sam's mother",
        specific_alts=(
            "was nervous about the wedding herself and said it without thinking",
            "makes the same kind of comment to everyone at the rehearsal",
            "meant it as an awkward joke about wedding speeches in general",
            "was stressed by the rehearsal and the two hundred guests",
            "was remembering a bad toast from another wedding",
            "wants the wedding to go perfectly and is worried about every detail",
        ),
        specific_coping=(
            "Sam chose {O} to give the toast for a reason.",
            "The guests at a wedding want the speech to go well.",
            "{Sc} can practice the toast with Sam before the wedding.",
            "A short and warm speech is all Sam needs.",
            "One comment at the rehearsal does not decide how the toast will go.",
        ),
        gpt4=(
            "Perhaps Sam's mother is anxious about the wedding going perfectly and voiced her nerves at you "
            "without meaning to wound. Sam chose you to give the toast because of your bond, and a sincere "
            "speech will land well with the guests.",
            "It could be that Sam's mother says blunt things to everyone when she is stressed, so her comment "
            "at the rehearsal is not really about you. You can prepare a short, heartfelt toast and trust "
            "that Sam's guests want you to do well.",
        ),
        opp_ref="Sam's mother",
        opp_detail="the comment at the rehearsal",
        opp_alts=(
            "was projecting her own jitters about the big day",
            "did not realise how loudly she spoke",
        ),
    ),
)

OOD_VIGNETTES = (
    Vignette(
        "ood01", "anger",
        "My roommate Keiko ate the leftovers I had labeled with my name, for the third time this month. "
        "When I asked about it, she shrugged and said food in the fridge is for everyone.",
        "ood", opp_ref="Keiko", opp_detail="the missing leftovers",
        opp_alts=("grew up in a household where the fridge was shared by default",
                  "did not notice the label and is embarrassed to admit it"),
    ),
    Vignette(
        "ood02", "sadness",
        "You were not invited to a former classmate's engagement party, even though the rest of your old "
        "study group was there. You only learned about it from a group chat weeks later.",
        "ood", opp_ref="the couple", opp_detail="being left off the guest list",
        opp_alts=("had a strict limit on guests set by the venue",
                  "assumed you had moved away and lost touch"),
    ),
    Vignette(
        "ood03", "fear",
        "Your landlord, Helga, left a note asking you to call her urgently about the lease. It is late on "
        "Friday and she is not answering her phone. You worry she plans to evict you.",
        "ood", opp_ref="Helga", opp_detail="the urgent note about the lease",
        opp_alts=("wants to discuss a routine repair or a paperwork detail",
                  "wrote the note in a hurry before leaving for the weekend"),
    ),
    Vignette(
        "ood04", "anger",
        "At a dinner party, my brother-in-law Marcus mocked my career choice in front of everyone and kept "
        "going after I asked him to stop. My spouse laughed along.",
        "ood", opp_ref="Marcus", opp_detail="the jokes at the dinner party",
        opp_alts=("was trying clumsily to be the entertaining one at the table",
                  "feels insecure about his own work and deflected onto you"),
    ),
    Vignette(
        "ood05", "sadness",
        "Your teenage son Eli has stopped talking to you at dinner and spends every evening in his room "
        "with the door closed. When you knock, he says he is fine and asks you to leave him alone.",
        "ood", opp_ref="Eli", opp_detail="the closed door",
        opp_alts=("is working through an ordinary teenage need for privacy",
                  "is dealing with something at school that he is not ready to share"),
    ),
    Vignette(
        "ood06", "fear",
        "My best friend Noor has been distant for two weeks, and yesterday I saw her laughing with a new "
        "group at the gym. I am scared she has replaced me.",
        "ood", opp_ref="Noor", opp_detail="the distance between you",
        opp_alts=("is absorbed in a new routine and has not noticed the gap",
                  "assumed you were busy and did not want to intrude"),
    ),
    Vignette(
        "ood07", "anger",
        "Your teammate Ravi missed the deadline for his part of the group assignment, and the whole team "
        "lost points. He apologized in the chat with a single line and then went offline.",
        "ood", opp_ref="Ravi", opp_detail="the missed deadline",
        opp_alts=("was overwhelmed by another course and is ashamed",
                  "went offline because he did not know how to make amends"),
    ),
    Vignette(
        "ood08", "sadness",
        "I sent a long message congratulating my old mentor, Professor Lind, on her retirement, and she "
        "replied with one word. We used to talk every week.",
        "ood", opp_ref="Professor Lind", opp_detail="the one-word reply",
        opp_alts=("is receiving hundreds of messages this week and is replying in bulk",
                  "was moved by the message but is not comfortable writing at length"),
    ),
    Vignette(
        "ood09", "fear",
        "Your manager, Ines, scheduled a private meeting with you for tomorrow morning without saying why. "
        "Two people on your floor were let go last month.",
        "ood", opp_ref="Ines", opp_detail="the unexplained meeting",
        opp_alts=("wants to talk about a new assignment or some feedback",
                  "was simply too busy to write a detailed invitation"),
    ),
    Vignette(
        "ood10", "anger",
        "A stranger on the train played videos loudly next to me for forty minutes. When I politely asked "
        "him to use headphones, he rolled his eyes and turned the volume up.",
        "ood", opp_ref="the stranger", opp_detail="the loud videos",
        opp_alts=("was having a miserable day and reacted defensively",
                  "felt embarrassed at being corrected in public"),
    ),
    Vignette(
        "ood11", "sadness",
        "Your grandmother called you by your cousin's name twice during your visit and did not remember "
        "the photos you brought last time. You left feeling like she no longer knows who you are.",
        "ood", opp_ref="your grandmother", opp_detail="the mix-up with names",
        opp_alts=("was tired that afternoon and her memory slips more when she is worn out",
                  "still feels the warmth of your visits even when the details fade"),
    ),
    Vignette(
        "ood12", "fear",
        "My girlfriend's parents invited me to their house for the first time, and her father barely spoke "
        "to me all evening. She says he is just quiet, but I keep thinking he disapproves of me.",
        "ood", opp_ref="her father", opp_detail="the quiet evening",
        opp_alts=("is reserved with everyone he does not know well yet",
                  "was nervous about meeting you too"),
    ),
    Vignette(
        "ood13", "anger",
        "Your friend Tariq borrowed your camera for a weekend trip and returned it with a cracked lens. "
        "He has not offered to pay and acts as if nothing happened.",
        "ood", opp_ref="Tariq", opp_detail="the cracked lens",
        opp_alts=("did not notice the crack and assumes it was already there",
                  "is ashamed and hoping the issue fades"),
    ),
    Vignette(
        "ood14", "sadness",
        "At my farewell party at work, only three colleagues came, although I had worked there for six "
        "years. My closest colleague said she had a dentist appointment.",
        "ood", opp_ref="your closest colleague", opp_detail="the small turnout",
        opp_alts=("had an appointment that could not be moved",
                  "finds farewells painful and avoided the moment"),
    ),
)

# Generic human phrase banks (shared across scenarios). Slots: {S}/{Sc} subject
# (you/I), {O} object (you/me), {P} possessive (your/my), {R} reflexive,
# {BE} (are/am), {WAS} (were/was). Generic alternative clauses follow "they" or
# "the other person", so they avoid number agreement (past tense or modals).
GENERIC_REFS = ("they", "the other person", "the person involved")
GENERIC_ALTS = (
    "had a rough day that {S} did not see",
    "did not realize how much it meant to {O}",
    "had something urgent going on",
    "felt overwhelmed and handled it badly",
    "meant no harm at all",
    "did not think it through",
    "got caught up in their own worries",
    "never heard the whole story",
    "had their own reasons that had nothing to do with {O}",
    "struggled with something they did not want to share",
)
ALT_TEMPLATES = (
    "Maybe {ref} {clause}.",
    "Perhaps {ref} {clause}.",
    "It could be that {ref} {clause}.",
    "It is possible that {ref} {clause}.",
    "{Sc} can remind {R} that maybe {ref} {clause}.",
    "{Sc} could consider that perhaps {ref} {clause}.",
)
GENERIC_COPING = (
    "{Sc} {BE} allowed to feel hurt, and the feeling will pass.",
    "{Sc} can talk about it calmly when {S} {BE} ready.",
    "This does not define {P} worth.",
    "{Sc} have handled harder things before.",
    "One bad moment does not have to ruin everything for {O}.",
    "{Sc} can choose how much this matters to {O}.",
    "Tomorrow this will probably feel smaller to {O}.",
    "{Sc} do not have to solve everything today.",
    "It is okay to take a breath and let it go.",
    "Just ignore it.",
    "Forget about it and move on.",
    "It is not a big deal in the long run.",
    "Try not to take it personally.",
)
FILLER = (
    "Honestly things like this happen to everybody at some point and there is not really a lot that "
    "anyone can do about it in the end.",
    "Life is long and full of ups and downs and sometimes people just do things that {S} cannot control "
    "no matter how hard {S} try.",
    "It is like that with most situations where feelings get involved and everything gets complicated "
    "very quickly for everyone.",
    "{Sc} could also go for a walk or watch a show or call someone else or do anything really to keep "
    "{P} mind busy for a while.",
    "In general the world keeps turning and next year none of this will seem as important as it does "
    "right now.",
    "People are complicated and everyone has their own stuff going on in their lives, which is just how "
    "it is.",
    "Thinking about situations like this, nothing stays the same forever and everything changes "
    "eventually anyway.",
    "There is a lot going on in the world and sometimes small things feel huge when they happen but "
    "later they shrink.",
    "It is also worth remembering that stress and tiredness make every problem look bigger than it "
    "really is at the time.",
)
PERSONS = {
    "you": {"S": "you", "Sc": "You", "O": "you", "P": "your", "R": "yourself", "BE": "are", "WAS": "were"},
    "I": {"S": "I", "Sc": "I", "O": "me", "P": "my", "R": "myself", "BE": "am", "WAS": "was"},
}
SENTENCE_COUNT_CHOICES = (1, 2, 3, 4, 5)
SENTENCE_COUNT_PROBS = (0.30, 0.35, 0.17, 0.11, 0.07)

# Opponent answer templates (wording deliberately disjoint from the human banks).
OPPONENT_TEMPLATES = {
    "deepseek-r1": (
        "Consider that {ref} {alt0}; the situation reflects their circumstances more than your value. "
        "Holding that possibility can soften the sting of {detail}.",
        "There may be an explanation you have not heard yet: {ref} {alt1}. Giving them the benefit of the "
        "doubt lets you respond to {detail} from a calmer place.",
    ),
    "qwen2.5-72b": (
        "It is understandable to feel this way about {detail}. One way to see it is that {ref} {alt0}, "
        "which is not a statement about your worth.",
        "Try viewing {detail} from their side: {ref} {alt1}. Seeing it that way can make it easier to "
        "talk openly.",
    ),
}
OPPONENT_SHORT = {"deepseek-r1": "r1", "qwen2.5-72b": "qwen"}

# --------------------------------------------------------------------------
# Text features (the planted drivers of quality)
# --------------------------------------------------------------------------

_WORD = re.compile(r"[a-z0-9]+")
_SECOND_PERSON = re.compile(r"\b(you|your|yours|yourself)\b", re.IGNORECASE)
_ALTERNATIVE = re.compile(r"\b(maybe|perhaps|possibly|could be that|possible that)\b", re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.!?]+(?:\s+|$)")


def tokens(text: str) -> list[str]:
    """Lower-case word tokens (letters and digits), as used for n-gram checks."""
    return _WORD.findall(text.lower())


def count_sentences(text: str) -> int:
    return len([p for p in _SENTENCE_END.split(text.strip()) if p.strip()])


def text_features(text: str, keywords: Sequence[str]) -> dict[str, int]:
    """The textual features that drive the planted latent quality."""
    words = set(tokens(text))
    return {
        "second_person": int(bool(_SECOND_PERSON.search(text))),
        "specific_hits": sum(1 for k in keywords if k in words),
        "alternative": int(bool(_ALTERNATIVE.search(text))),
        "n_sentences": count_sentences(text),
    }


def raw_quality(features: dict[str, int]) -> float:
    w = QUALITY_WEIGHTS
    return (
        w["second_person"] * features["second_person"]
        + w["specific_hits"] * min(features["specific_hits"], SPECIFIC_CAP)
        + w["alternative"] * features["alternative"]
        + w["extra_sentences"] * max(0, features["n_sentences"] - 2)
    )


# --------------------------------------------------------------------------
# Generation
# --------------------------------------------------------------------------


def _fill(template: str, person: str) -> str:
    return template.format(**PERSONS[person])


def _cap(sentence: str) -> str:
    return sentence[0].upper() + sentence[1:]


def _compose_human(v: Vignette, rng: np.random.Generator) -> str:
    person = "you" if rng.random() < 0.55 else "I"
    alt = rng.random() < 0.60
    specific = rng.random() < 0.50
    n_sent = int(rng.choice(SENTENCE_COUNT_CHOICES, p=SENTENCE_COUNT_PROBS))
    core_n = min(n_sent, 2)
    core: list[str] = []
    if alt:
        template = ALT_TEMPLATES[int(rng.integers(len(ALT_TEMPLATES)))]
        if specific:
            ref = v.name
            clause = v.specific_alts[int(rng.integers(len(v.specific_alts)))]
        else:
            ref = GENERIC_REFS[int(rng.integers(len(GENERIC_REFS)))]
            clause = GENERIC_ALTS[int(rng.integers(len(GENERIC_ALTS)))]
        sentence = template.replace("{ref}", ref).replace("{clause}", clause)
        core.append(_cap(_fill(sentence, person)))
    while len(core) < core_n:
        use_specific = specific and (not alt or rng.random() < 0.5)
        bank = v.specific_coping if use_specific else GENERIC_COPING
        sentence = _cap(_fill(bank[int(rng.integers(len(bank)))], person))
        if sentence not in core:
            core.append(sentence)
    n_filler = n_sent - core_n
    filler_idx = rng.permutation(len(FILLER))[:n_filler]
    sentences = list(core)
    for i in filler_idx:
        pos = int(rng.integers(1, len(sentences) + 1))  # never before the first core sentence
        sentences.insert(pos, _cap(_fill(FILLER[int(i)], person)))
    return " ".join(sentences)


def _human_reappraisals(rng: np.random.Generator) -> dict[str, list[dict]]:
    """Per study: list of {id, vignette_id, text}. Unique texts within a scenario."""
    out: dict[str, list[dict]] = {s.name: [] for s in STUDIES}
    for v in TRAIN_VIGNETTES:
        seen: set[str] = set()  # membership only, never iterated
        for study in STUDIES:
            for _ in range(study.n_per_vignette):
                for _attempt in range(1000):
                    text = _compose_human(v, rng)
                    if text not in seen:
                        break
                else:  # pragma: no cover - banks are large enough
                    raise RuntimeError(f"could not compose a unique reappraisal for {v.vignette_id}")
                seen.add(text)
                out[study.name].append({"vignette_id": v.vignette_id, "text": text})
    # Shuffle within each study, then number in file order, so that neither the
    # row order nor the ids reveal the scenario.
    for study in STUDIES:
        rows = out[study.name]
        rows = [rows[int(i)] for i in rng.permutation(len(rows))]
        for k, row in enumerate(rows, start=1):
            row["id"] = f"{study.prefix}_r{k:04d}"
        out[study.name] = rows
    return out


def _opponent_answers() -> list[dict]:
    rows = []
    for v in TRAIN_VIGNETTES + OOD_VIGNETTES:
        for model in OPPONENT_MODELS:
            for j, template in enumerate(OPPONENT_TEMPLATES[model], start=1):
                text = template.format(ref=v.opp_ref, alt0=v.opp_alts[0], alt1=v.opp_alts[1], detail=v.opp_detail)
                rows.append({
                    "answer_id": f"opp_{OPPONENT_SHORT[model]}_{v.vignette_id}_{j}",
                    "vignette_id": v.vignette_id,
                    "model": model,
                    "text": _cap(text),
                })
    return rows


def _assign_raters(n_items: int, rng: np.random.Generator) -> list[list[int]]:
    """Return, per rater, the (ordered) item indices they rate.

    Each item gets RATINGS_PER_ITEM ratings (uniform in the inclusive range),
    each rater rates ITEMS_PER_RATER items, no rater rates an item twice.
    Greedy: items in decreasing demand go to the raters with the most
    remaining capacity (random tie-break), which always succeeds here.
    """
    lo_k, hi_k = RATINGS_PER_ITEM
    lo_l, hi_l = ITEMS_PER_RATER
    demand = rng.integers(lo_k, hi_k + 1, size=n_items)
    total = int(demand.sum())
    n_raters = max(1, int(round(total / TARGET_ITEMS_PER_RATER)))
    loads = np.full(n_raters, total // n_raters, dtype=np.int64)
    loads[: total % n_raters] += 1
    for _ in range(6 * n_raters):  # spread loads while keeping them in range
        a, b = (int(x) for x in rng.choice(n_raters, size=2, replace=False))
        d = int(rng.integers(1, 9))
        if loads[a] - d >= lo_l and loads[b] + d <= hi_l:
            loads[a] -= d
            loads[b] += d
    remaining = loads.copy()
    per_rater: list[list[int]] = [[] for _ in range(n_raters)]
    perm = rng.permutation(n_items)
    order = perm[np.argsort(-demand[perm], kind="stable")]
    for item in order:
        tie = rng.random(n_raters)
        chosen = np.lexsort((tie, -remaining))[: int(demand[item])]
        if np.any(remaining[chosen] <= 0):  # pragma: no cover
            raise RuntimeError("rater assignment failed")
        remaining[chosen] -= 1
        for r in chosen:
            per_rater[int(r)].append(int(item))
    assert int(remaining.sum()) == 0
    return [[lst[int(i)] for i in rng.permutation(len(lst))] for lst in per_rater]


def _fmt(x: float) -> str:
    return f"{round(float(x), 4) + 0.0:.4f}"


def _csv_bytes(header: Sequence[str], rows: Sequence[Sequence[object]]) -> bytes:
    buf = io.StringIO(newline="")
    writer = csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
    writer.writerow(header)
    for row in rows:
        writer.writerow(row)
    return buf.getvalue().encode("utf-8")


def _write(path: Path, data: bytes) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
        os.chmod(tmp, 0o644)  # mkstemp creates 0600 files


def build(seed: int = DEFAULT_SEED) -> dict[str, bytes]:
    """Build every file of the demo dataset in memory: {relative path: bytes}."""
    rng = np.random.default_rng(seed)
    files: dict[str, bytes] = {}
    origin = DATA_ORIGIN

    # 1. vignettes
    files["vignettes.csv"] = _csv_bytes(
        ("vignette_id", "text", "emotion", "pool", "data_origin"),
        [(v.vignette_id, v.text, v.emotion, v.pool, origin) for v in TRAIN_VIGNETTES + OOD_VIGNETTES],
    )

    # 2. human reappraisals
    humans = _human_reappraisals(rng)
    for study in STUDIES:
        files[study.reappraisal_file] = _csv_bytes(
            study.reappraisal_columns + ("data_origin",),
            [(r["id"], r["vignette_id"], r["text"], origin) for r in humans[study.name]],
        )

    # 3. GPT-4 references
    gpt4 = []
    for v in TRAIN_VIGNETTES:
        for j, text in enumerate(v.gpt4, start=1):
            gpt4.append({"id": f"gpt4_{v.vignette_id}_{j}", "vignette_id": v.vignette_id, "text": text})
    files["gpt4_reappraisals.csv"] = _csv_bytes(
        ("reappraisal_id", "vignette_id", "text", "model", "data_origin"),
        [(g["id"], g["vignette_id"], g["text"], GPT4_MODEL, origin) for g in gpt4],
    )

    # 4. opponents
    files["opponents.csv"] = _csv_bytes(
        ("answer_id", "vignette_id", "model", "text", "data_origin"),
        [(o["answer_id"], o["vignette_id"], o["model"], o["text"], origin) for o in _opponent_answers()],
    )

    # Latent quality: features + noise, standardized by the human mean and SD.
    keywords = {v.vignette_id: v.keywords for v in TRAIN_VIGNETTES}
    all_items = [dict(r, author_type="human", study=s.label) for s in STUDIES for r in humans[s.name]]
    all_items += [dict(g, author_type="gpt4", study="1") for g in gpt4]  # GPT-4 references are rated in study 1
    feats = [text_features(it["text"], keywords[it["vignette_id"]]) for it in all_items]
    raw = np.array([raw_quality(f) for f in feats]) + rng.normal(0.0, QUALITY_NOISE_SD, size=len(all_items))
    is_human = np.array([it["author_type"] == "human" for it in all_items])
    mu, sd = raw[is_human].mean(), raw[is_human].std()
    quality = {it["id"]: round(float((q - mu) / sd), 4) + 0.0 for it, q in zip(all_items, raw)}

    # Reappraisal-level latent score per dimension.
    dim_scores: dict[str, np.ndarray] = {}
    for it in all_items:
        q = quality[it["id"]]
        e = rng.normal(0.0, 1.0, size=len(DIMENSIONS))
        a = np.array([DIMENSION_LOADINGS[d] for d in DIMENSIONS])
        dim_scores[it["id"]] = a * q + np.sqrt(1.0 - a**2) * e

    # 5. ratings
    severity_rows = []
    n_clipped = n_values = 0
    constant = {(s, r, d): val for s, r, d, val in CONSTANT_RATERS}
    for study in STUDIES:
        items = [r["id"] for r in humans[study.name]]
        if study.name == "study1":
            items += [g["id"] for g in gpt4]
        assignment = _assign_raters(len(items), rng)
        rows = []
        for k, rater_items in enumerate(assignment, start=1):
            rater_id = f"{study.prefix}_p{k:03d}"
            sev = round(float(rng.normal(0.0, RATER_SEVERITY_SD)), 4) + 0.0
            severity_rows.append((study.label, rater_id, _fmt(sev), origin))
            for idx in rater_items:
                rid = items[idx]
                noise = rng.normal(0.0, RATING_NOISE_SD, size=len(DIMENSIONS))
                latent = SCALE_CENTER + study.multiplier * dim_scores[rid] + study.offset + sev + noise
                rounded = np.floor(latent + 0.5)
                n_clipped += int(np.sum((rounded < SCALE_MIN) | (rounded > SCALE_MAX)))
                n_values += rounded.size
                values = np.clip(rounded, SCALE_MIN, SCALE_MAX).astype(int)
                out = []
                for d, val in zip(DIMENSIONS, values):
                    out.append(constant.get((study.label, rater_id, d), int(val)))
                rows.append((rater_id, rid, *out, origin))
        files[study.rating_file] = _csv_bytes(study.rating_columns + ("data_origin",), rows)
    for s, r, _d, _v in CONSTANT_RATERS:
        if not any(row[0] == s and row[1] == r for row in severity_rows):  # pragma: no cover
            raise RuntimeError(f"constant rater {r} does not exist in {s}")

    # 6. truth (not part of the export)
    files["truth/rater_severity.csv"] = _csv_bytes(("study", "rater_id", "severity", "data_origin"), severity_rows)
    files["truth/reappraisal_quality.csv"] = _csv_bytes(
        ("reappraisal_id", "vignette_id", "quality", "data_origin"),
        [(it["id"], it["vignette_id"], _fmt(quality[it["id"]]), origin) for it in all_items],
    )
    files["truth/reappraisal_features.csv"] = _csv_bytes(
        ("reappraisal_id", "vignette_id", "author_type", "study", "second_person", "specific_hits", "alternative",
         "n_sentences", "data_origin"),
        [(it["id"], it["vignette_id"], it["author_type"], it["study"], f["second_person"], f["specific_hits"], f["alternative"],
          f["n_sentences"], origin) for it, f in zip(all_items, feats)],
    )
    files["truth/study_scale.csv"] = _csv_bytes(
        ("study", "center", "multiplier", "offset", "noise_sd", "data_origin"),
        [(s.label, _fmt(SCALE_CENTER), _fmt(s.multiplier), _fmt(s.offset), _fmt(RATING_NOISE_SD), origin)
         for s in STUDIES],
    )
    files["truth/dimension_loadings.csv"] = _csv_bytes(
        ("dimension", "loading", "data_origin"), [(d, _fmt(DIMENSION_LOADINGS[d]), origin) for d in DIMENSIONS]
    )
    files["truth/constant_raters.csv"] = _csv_bytes(
        ("study", "rater_id", "dimension", "value", "data_origin"),
        [(s, r, d, v, origin) for s, r, d, v in CONSTANT_RATERS],
    )
    files["README.md"] = _readme(files, seed, n_clipped / n_values).encode("utf-8")
    return files


def _n_rows(data: bytes) -> int:
    return len(list(csv.reader(io.StringIO(data.decode("utf-8"))))) - 1


def _readme(files: dict[str, bytes], seed: int, clipped_share: float) -> str:
    n = {name: _n_rows(data) for name, data in files.items()}
    n_raters: dict[str, int] = {}
    sev_rows = list(csv.reader(io.StringIO(files["truth/rater_severity.csv"].decode("utf-8"))))[1:]
    for s in STUDIES:
        n_raters[s.name] = sum(1 for row in sev_rows if row[0] == s.label)
    n_ratings = sum(n[s.rating_file] for s in STUDIES)
    n_train = len(TRAIN_VIGNETTES)
    n_ood = len(OOD_VIGNETTES)
    n_gpt4 = n["gpt4_reappraisals.csv"]
    study_lines = "\n".join(
        f"| `{s.label}` | {n[s.reappraisal_file]} | {n[s.rating_file]} | {n_raters[s.name]} "
        f"| {s.multiplier:.2f} | {s.offset:+.2f} |"
        for s in STUDIES
    )
    loadings = ", ".join(f"{d} {DIMENSION_LOADINGS[d]:.2f}" for d in DIMENSIONS)
    constants = "\n".join(f"- `{r}` (study {s}): {d} is always {v}" for s, r, d, v in CONSTANT_RATERS)
    w = QUALITY_WEIGHTS
    return f"""# Demo dataset (SYNTHETIC)

**Every file in this folder is synthetic.** It was produced by
`src/reappraisal/data/demo_generator.py` for the offline `demo` preset. No row
comes from the study of Li, Herderich, Nair & Goldenberg (2025) (OSF `z9e48`);
the scenarios, reappraisals, "GPT-4" references, opponent answers, raters and
ratings were all written or simulated for this demo. Numbers computed from it
carry no scientific meaning. Every CSV has a column `data_origin` whose value
is `{DATA_ORIGIN}` on every row.

Rebuild bit-for-bit (a test checks this):

```
python -m reappraisal.data.demo_generator --out data/demo --seed {seed}
```

The layout imitates a plausible OSF export: each study has its *own* column
names, so ingestion must be driven by a declared column mapping.

## Files

| file | rows | columns / content |
|---|---|---|
| `vignettes.csv` | {n["vignettes.csv"]} | `vignette_id, text, emotion, pool`: {n_train} training scenarios `v01`..`v{n_train:02d}` (pool `train`) and {n_ood} out-of-distribution scenarios `ood01`..`ood{n_ood:02d}` (pool `ood`); emotions sadness/fear/anger |
| `study1_reappraisals.csv` | {n["study1_reappraisals.csv"]} | `reappraisal_id, vignette_id, response` |
| `study3_reappraisals.csv` | {n["study3_reappraisals.csv"]} | `rid, scenario, reappraisal_text` (`scenario` holds the vignette id) |
| `study4_reappraisals.csv` | {n["study4_reappraisals.csv"]} | `reappraisal_id, vignette_id, response` |
| `gpt4_reappraisals.csv` | {n_gpt4} | `reappraisal_id, vignette_id, text, model` (`model` = `{GPT4_MODEL}`), 1-3 per training scenario, ids `gpt4_<vignette>_<n>` |
| `opponents.csv` | {n["opponents.csv"]} | `answer_id, vignette_id, model, text`; `model` in `{"`, `".join(OPPONENT_MODELS)}`, 2 answers per model for every training and OOD scenario |
| `study1_ratings.csv` | {n["study1_ratings.csv"]} | `rater, reappraisal_id, effectiveness, empathy, novelty, specificity` (also rates the GPT-4 references) |
| `study3_ratings.csv` | {n["study3_ratings.csv"]} | `participant, rid, eff, emp, nov, spec` |
| `study4_ratings.csv` | {n["study4_ratings.csv"]} | `rater, reappraisal_id, effectiveness, empathy, novelty, specificity` |
| `truth/…` | | planted parameters, **not part of the export** (used only by tests) |

Ratings are wide (one row per rater x reappraisal, four integer dimensions on
a 1-7 scale): {n_ratings} rows, i.e. {4 * n_ratings} long-format ratings.
Reappraisal ids are unique across all files (`s1_r0001`, `s3_r0001`,
`s4_r0001`, `gpt4_v01_1`, opponent answers `opp_r1_v01_1` / `opp_qwen_v01_1`).
Rater ids are unique per study and carry the study prefix (`s1_p001`, ...).

## Planted structure

**Human reappraisals.** {sum(s.n_per_vignette for s in STUDIES)} per training
scenario ({", ".join(f"{s.n_per_vignette} in {s.name}" for s in STUDIES)}),
composed from phrase banks: an optional alternative interpretation ("Maybe
they ...", "It could be that Jordan ..."), written either to the reader ("you")
or in first person ("I"), either scenario-specific (names and details of the
scenario) or generic, with 1-5 sentences where sentences beyond two are
rambling filler. Texts are unique within a scenario.

**Latent quality.** For every human and GPT-4 reappraisal, features are read
off the text (`truth/reappraisal_features.csv`):

- `second_person`: mentions you/your/yourself (weight {w["second_person"]:+.2f})
- `specific_hits`: number of distinct scenario keywords used, capped at {SPECIFIC_CAP} (weight {w["specific_hits"]:+.2f} each)
- `alternative`: contains maybe/perhaps/possibly/"could be that"/"possible that" (weight {w["alternative"]:+.2f})
- `n_sentences`: each sentence beyond two costs {w["extra_sentences"]:+.2f}

raw quality = weighted sum + Normal(0, {QUALITY_NOISE_SD}) noise; `quality` in
`truth/reappraisal_quality.csv` is the raw quality standardized by the mean and
SD of the human reappraisals (so GPT-4 references, which have all the good
features, sit well above 0).

**Dimensions.** Per reappraisal and dimension, a latent score
`a_d * quality + sqrt(1 - a_d^2) * e` with `e ~ Normal(0, 1)` and loadings
{loadings} (`truth/dimension_loadings.csv`).

**Ratings.** `rating = clip(floor(center + m_s * score + o_s + severity_r +
noise + 0.5), 1, 7)` with center {SCALE_CENTER}, noise ~ Normal(0,
{RATING_NOISE_SD}) per rating and dimension, per-study multiplier `m_s` and
offset `o_s` (`truth/study_scale.csv`; study 3 is lenient and compressed,
study 4 harsher and more spread). Only {100 * clipped_share:.1f}% of the rounded
values fell outside 1-7 and were clipped, so severity stays recoverable. The study
labels used in `truth/` are `1`, `3`, `4`, the same as the `study` values
that the demo preset's ingest mapping in `config.yaml` assigns.

| study | reappraisals | rating rows | raters | multiplier `m_s` | offset `o_s` |
|---|---|---|---|---|---|
{study_lines}

**Rater severity** is one offset per rater, **shared across the four
dimensions**, drawn from Normal(0, {RATER_SEVERITY_SD})
(`truth/rater_severity.csv`: `study, rater_id, severity`). Each reappraisal
gets {RATINGS_PER_ITEM[0]}-{RATINGS_PER_ITEM[1]} ratings from distinct raters of its study; each
rater rates {ITEMS_PER_RATER[0]}-{ITEMS_PER_RATER[1]} reappraisals. No rater appears in two studies.

**Zero-variance raters** (`truth/constant_raters.csv`), planted to exercise
z-scoring of a constant column; their other dimensions are normal:

{constants}

**Held-out texts.** GPT-4 references and opponent answers are written with
wording disjoint from the human phrase banks (no shared 8-word n-gram with any
human reappraisal), and the OOD scenarios share no 8-word n-gram with the
training scenarios or any of their reappraisals/answers (tokens: lower-cased
runs of letters and digits, with apostrophes either splitting words or kept
inside them; checked both ways).

## truth/ (not part of the export)

| file | columns |
|---|---|
| `truth/rater_severity.csv` | `study, rater_id, severity` |
| `truth/reappraisal_quality.csv` | `reappraisal_id, vignette_id, quality` |
| `truth/reappraisal_features.csv` | `reappraisal_id, vignette_id, author_type, study, second_person, specific_hits, alternative, n_sentences` |
| `truth/study_scale.csv` | `study, center, multiplier, offset, noise_sd` |
| `truth/dimension_loadings.csv` | `dimension, loading` |
| `truth/constant_raters.csv` | `study, rater_id, dimension, value` |

Each also has the `data_origin` column.
"""


def generate(out_dir: Path, seed: int = DEFAULT_SEED) -> None:
    """Write the demo dataset into ``out_dir`` (files are replaced atomically)."""
    out_dir = Path(out_dir)
    for rel, data in build(seed).items():
        _write(out_dir / rel, data)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Generate the SYNTHETIC demo dataset.")
    parser.add_argument("--out", type=Path, default=Path("data/demo"), help="output folder")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="random seed")
    args = parser.parse_args(argv)
    generate(args.out, args.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
