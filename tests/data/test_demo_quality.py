"""The demo world's gold: it rewards a good reappraisal and cannot be gamed by degenerate text."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest

from reappraisal.data import demo_generator as gen
from reappraisal.data.demo_gold import gold_quality, gold_reading, human_gold_quantiles, human_reappraisals
from reappraisal.data.demo_quality import clauses, sentence_count

TRAIN = {v.vignette_id: v for v in gen.TRAIN_VIGNETTES}


def degenerate_catalogue(v: gen.Vignette) -> dict[str, str]:
    """Texts that game a countable gold or say the wrong thing in the world's own phrases: each must read below the
    scenario's median human reappraisal."""
    other = TRAIN["v02" if v.vignette_id == "v01" else "v01"]
    alt, alt2 = v.specific_alts[0], v.specific_alts[1]
    words = gen.tokens(v.text)
    random.Random(v.vignette_id).shuffle(words)
    kw = list(v.keywords)
    good_sentences = [f"Maybe {v.name} {alt}." for alt in v.specific_alts]
    filler = [gen._cap(gen._fill(f, "you")) for f in gen.FILLER]
    return {
        "scenario words shuffled": " ".join(words[:30]),
        "keyword stuffing": "Perhaps you " + " ".join(kw * 3),
        "keyword salad": f"perhaps you {kw[0]} {kw[0]} {kw[0]} {kw[1]} {kw[1]} {kw[2]}",
        "one hedge word repeated": " ".join(["maybe"] * 20),
        "a 200-word run-on sentence": " ".join(
            (" and ".join(f"maybe {v.name} {alt} and you can remember that" for alt in v.specific_alts * 3)).split()[:200]),
        "sentences joined by semicolons": "; ".join(s.rstrip(".") for s in good_sentences[:3] + filler[:4]) + ".",
        "an insult wrapped in hedges": f"You are worthless, maybe {v.name} hates you and perhaps you deserve it.",
        "a list of emotions": "Sad, hurt, angry, betrayed, lonely, anxious, rejected, embarrassed.",
        "the scenario text copied": v.text,
        "the empty string": "",
        "all caps": (good_sentences[0] + " You can talk about it calmly when you are ready.").upper(),
        "dismissive": f"Just ignore it. Forget about it and move on, {v.name} is not a big deal.",
        "blame of the person": f"Maybe {v.name} {alt}, but it is your own fault. You overreacted and you are too "
                               f"sensitive.",
        "a denial of their worth": f"Maybe {v.name} {alt2} because you are not important to them. You can remind "
                                   f"yourself that you are not worth the trouble.",
        "belittling their work": f"Perhaps {v.name} {alt} because your work was not good enough, and you can accept "
                                 f"that your effort was mediocre.",
        "a confirmation of their fear": f"Perhaps {v.name} {alt} because they really meant to hurt you. They do not "
                                        f"care about you at all.",
        "a reading about another scenario": f"Maybe {other.name} {other.specific_alts[0]}, which says more about a "
                                            f"hard moment than about you. You can ask about it calmly when you are "
                                            f"ready.",
        "a negated reading": f"It is not possible that {v.name} {alt}. There is no way that maybe {v.name} {alt2}.",
    }


@pytest.mark.parametrize("vignette_id", sorted(TRAIN))
def test_every_degenerate_text_reads_below_the_scenarios_median_human(vignette_id):
    v = TRAIN[vignette_id]
    median = human_gold_quantiles(vignette_id)[0.5]
    scores = {name: gold_quality(text, v.text) for name, text in degenerate_catalogue(v).items()}
    above = {name: round(s, 3) for name, s in scores.items() if s >= median}
    assert not above, f"{vignette_id}: above the human median {median:+.3f}: {above}"


@pytest.mark.parametrize("vignette_id", sorted(TRAIN))
def test_a_sensible_reappraisal_beats_the_human_median_and_its_degenerate_variants(vignette_id):
    v = TRAIN[vignette_id]
    good = (f"Maybe {v.name} {v.specific_alts[0]}, which says more about a hard moment than about you. "
            f"You can ask about it calmly when you are ready.")
    q_good = gold_quality(good, v.text)
    assert q_good > human_gold_quantiles(vignette_id)[0.5]
    assert q_good > max(gold_quality(t, v.text) for t in degenerate_catalogue(v).values()) + 1.0


def test_benign_uses_of_harsh_words_are_not_punished():
    v = TRAIN["v01"]
    for text in ("It could be that Jordan handled it poorly, which would not mean your friendship is worthless.",
                 "Moments like this are hard for anyone who cares about the people in their life.",
                 "It is not possible that Jordan meant to hurt you; you do not deserve this.",
                 "Their silence doesn't mean they are leaving you, and it is not your fault."):
        reading = gold_reading(text, v.text)
        assert (reading.hostility, reading.harm, reading.dismissive) == (0.0, 0.0, 0.0), text
    # the same words, meant: an insult, a dismissal, a confirmation of the fear
    assert gold_reading("Your friendship is worthless.", v.text).hostility > 0
    assert gold_reading("Who cares about Jordan?", v.text).dismissive > 0
    assert gold_reading("Maybe Jordan meant to hurt you.", v.text).harm > 0
    # a clause that runs the person down, rules a reading out or reads another scenario earns no alternative
    assert gold_reading("Maybe Jordan mixed up the date of the birthday dinner.", v.text).alternative > 0.9
    for text in ("Maybe Jordan mixed up the date because you are not important to them.",
                 "It is not possible that Jordan mixed up the date of the birthday dinner.",
                 "Maybe Priya mixed up the date of the birthday dinner."):
        assert gold_reading(text, v.text).alternative == 0.0, text


def test_every_gpt4_reference_reads_without_hostility_harm_or_dismissal():
    for v in gen.TRAIN_VIGNETTES:
        for text in v.gpt4:
            reading = gold_reading(text, v.text)
            assert (reading.hostility, reading.harm, reading.dismissive, reading.off_scenario) == (0, 0, 0, 0), text


def test_the_components_interact_rather_than_add():
    v = TRAIN["v01"]
    alt = "Maybe Jordan mixed up the date of the birthday dinner."
    # a hedge is worth something only with an alternative reading after it
    assert gold_reading("Maybe.", v.text).alternative == 0.0
    assert gold_reading("Maybe you feel sad about the dinner.", v.text).alternative == 0.0
    assert gold_reading(alt, v.text).alternative > 0.9
    # a specific alternative beats a generic one
    assert gold_reading(alt, v.text).alternative > gold_reading("Maybe they had a rough day.", v.text).alternative
    # relevance has diminishing returns and counts only inside fluent clauses
    assert gold_reading("jordan birthday dinner messages concert photos", v.text).relevance < 0.5
    # the same earning content, shouted, earns nothing
    assert gold_reading(alt.upper(), v.text).raw < 0 < gold_reading(alt, v.text).raw
    # an interior length optimum: too short and too long both cost
    mid = alt + " You can ask Jordan about it calmly when you are ready."
    long = mid + " " + " ".join(gen._cap(gen._fill(f, "you")) for f in gen.FILLER[:4])
    assert gold_quality(mid, v.text) > gold_quality(alt, v.text)
    assert gold_quality(mid, v.text) > gold_quality(long, v.text)


def test_semicolons_and_missing_punctuation_do_not_hide_sentences():
    three = "Maybe they forgot. You can ask. It will pass."
    assert sentence_count(three) == sentence_count(three.replace(".", ";")) == 3
    run_on = " ".join(["and you can ask them about it"] * 12)  # 84 words, no punctuation
    assert sentence_count(run_on) == 3
    assert clauses("One: two; three!") == [["one"], ["two"], ["three"]]


def test_the_world_s_gpt4_references_are_good_but_not_at_the_ceiling():
    golds = [gold_quality(t, v.text) for v in gen.TRAIN_VIGNETTES for t in v.gpt4]
    humans = [gold_quality(t, TRAIN[vid].text) for vid, t in human_reappraisals()]
    median_human = sorted(humans)[len(humans) // 2]
    best_human = max(humans)
    mean_gpt4 = sum(golds) / len(golds)
    assert median_human < mean_gpt4 < best_human - 0.3


def test_gold_command_prints_the_reading_and_the_scenarios_human_median():
    text = "Maybe Jordan mixed up the date of your birthday dinner."
    out = subprocess.run([sys.executable, "-m", "reappraisal", "gold", "--scenario", "v01", "--json", text, ""],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    rows = [json.loads(line) for line in out]
    assert [r["text"] for r in rows] == [text, ""]
    assert rows[0]["gold"] == pytest.approx(gold_quality(text, TRAIN["v01"].text), abs=1e-4)
    assert rows[0]["human_median_gold"] == pytest.approx(human_gold_quantiles("v01")[0.5], abs=1e-4)
    assert rows[1]["gold"] < rows[0]["human_median_gold"] < rows[0]["gold"]
    assert {"fluency", "alternative", "hostility", "length_factor", "raw"} <= set(rows[0])
    bad = subprocess.run([sys.executable, "-m", "reappraisal", "gold", "--scenario", "v99", "x"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "v99" in bad.stderr
