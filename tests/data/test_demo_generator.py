"""The shipped SYNTHETIC demo dataset: reproducible, well-formed, with visible planted structure."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from reappraisal.data import demo_generator as gen
from reappraisal.data.demo_quality import sentence_count
from reappraisal.sentences import count_sentences

DEMO = Path(__file__).resolve().parents[2] / "data" / "demo"
DIMS = ("effectiveness", "empathy", "novelty", "specificity")

# Study labels as assigned by the demo preset's ingest mapping (config.yaml) and used in truth/.
REAPPRAISAL_FILES = {  # study -> (file, id column, vignette column, text column)
    "1": ("study1_reappraisals.csv", "reappraisal_id", "vignette_id", "response"),
    "3": ("study3_reappraisals.csv", "rid", "scenario", "reappraisal_text"),
    "4": ("study4_reappraisals.csv", "reappraisal_id", "vignette_id", "response"),
}
RATING_FILES = {  # study -> (file, rater column, id column, four dimension columns)
    "1": ("study1_ratings.csv", "rater", "reappraisal_id", DIMS),
    "3": ("study3_ratings.csv", "participant", "rid", ("eff", "emp", "nov", "spec")),
    "4": ("study4_ratings.csv", "rater", "reappraisal_id", DIMS),
}


def read(name: str) -> pd.DataFrame:
    return pd.read_csv(DEMO / name, dtype=str, keep_default_na=False, encoding="utf-8")


def ngrams(text: str, n: int = 8) -> set[tuple[str, ...]]:
    """8-grams under two tokenizations (apostrophes splitting words or kept inside them),
    so disjointness holds whichever one a leakage check uses."""
    out: set[tuple[str, ...]] = set()
    for pattern in (r"[a-z0-9]+", r"[a-z0-9']+"):
        words = re.findall(pattern, text.lower())
        out |= {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}
    return out


def all_ngrams(texts) -> set[tuple[str, ...]]:
    out: set[tuple[str, ...]] = set()
    for t in texts:
        out |= ngrams(t)
    return out


@pytest.fixture(scope="module")
def vignettes() -> pd.DataFrame:
    return read("vignettes.csv")


@pytest.fixture(scope="module")
def humans() -> pd.DataFrame:
    """Human reappraisals in canonical columns: study, reappraisal_id, vignette_id, text."""
    frames = []
    for study, (fname, id_col, v_col, t_col) in REAPPRAISAL_FILES.items():
        df = read(fname)
        assert list(df.columns) == [id_col, v_col, t_col, "data_origin"]
        frames.append(
            df.rename(columns={id_col: "reappraisal_id", v_col: "vignette_id", t_col: "text"})
            .drop(columns="data_origin")
            .assign(study=study)
        )
    return pd.concat(frames, ignore_index=True)


@pytest.fixture(scope="module")
def gpt4() -> pd.DataFrame:
    return read("gpt4_reappraisals.csv")


@pytest.fixture(scope="module")
def opponents() -> pd.DataFrame:
    return read("opponents.csv")


@pytest.fixture(scope="module")
def ratings() -> pd.DataFrame:
    """Long ratings: study, rater_id, reappraisal_id, dimension, rating (int)."""
    frames = []
    for study, (fname, rater_col, id_col, dim_cols) in RATING_FILES.items():
        df = read(fname)
        assert list(df.columns) == [rater_col, id_col, *dim_cols, "data_origin"]
        df = df.rename(columns={rater_col: "rater_id", id_col: "reappraisal_id", **dict(zip(dim_cols, DIMS))})
        long = df.melt(
            id_vars=["rater_id", "reappraisal_id"], value_vars=list(DIMS), var_name="dimension", value_name="rating"
        )
        frames.append(long.assign(study=study))
    out = pd.concat(frames, ignore_index=True)
    out["rating"] = out["rating"].astype(int)
    return out


@pytest.fixture(scope="module")
def quality() -> pd.Series:
    q = read("truth/reappraisal_quality.csv")
    return q.set_index("reappraisal_id")["quality"].astype(float)


# ---------------------------------------------------------------- reproducibility


def test_regeneration_is_byte_identical(tmp_path):
    gen.main(["--out", str(tmp_path / "demo")])
    regenerated = sorted(p.relative_to(tmp_path / "demo").as_posix() for p in (tmp_path / "demo").rglob("*") if p.is_file())
    committed = sorted(p.relative_to(DEMO).as_posix() for p in DEMO.rglob("*") if p.is_file())
    assert regenerated == committed
    for rel in committed:
        assert (tmp_path / "demo" / rel).read_bytes() == (DEMO / rel).read_bytes(), rel


def test_build_is_deterministic_and_seed_dependent():
    a, b = gen.build(), gen.build()
    assert a == b
    other = gen.build(seed=gen.DEFAULT_SEED + 1)
    assert other["study1_ratings.csv"] != a["study1_ratings.csv"]
    assert other["vignettes.csv"] == a["vignettes.csv"]  # hand-written content does not depend on the seed


def test_files_are_utf8_lf_and_small():
    total = 0
    for path in DEMO.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            total += len(data)
            data.decode("utf-8")  # strict
            assert b"\r" not in data, path
            assert data.endswith(b"\n"), path
    assert total < 5 * 1024 * 1024


def test_every_csv_row_is_marked_synthetic():
    csvs = sorted(DEMO.rglob("*.csv"))
    assert len(csvs) >= 9 + 3
    for path in csvs:
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
        assert df.columns[-1] == "data_origin", path
        assert len(df) > 0, path
        assert (df["data_origin"] == "SYNTHETIC demo data - not from the study").all(), path
    assert "synthetic" in (DEMO / "README.md").read_text(encoding="utf-8").lower()


# ---------------------------------------------------------------- structure


def test_vignettes(vignettes):
    assert list(vignettes.columns) == ["vignette_id", "text", "emotion", "pool", "data_origin"]
    train = vignettes[vignettes.pool == "train"]
    ood = vignettes[vignettes.pool == "ood"]
    assert list(train.vignette_id) == [f"v{i:02d}" for i in range(1, 7)]
    assert len(ood) >= 12
    assert list(ood.vignette_id) == [f"ood{i:02d}" for i in range(1, len(ood) + 1)]
    assert set(vignettes.pool) == {"train", "ood"}
    assert set(vignettes.emotion) <= {"sadness", "fear", "anger"}
    assert set(train.emotion) == {"sadness", "fear", "anger"}
    for text in vignettes.text:
        assert 2 <= count_sentences(text) <= 4, text
        assert re.match(r"^(You|Your|I|My|At|A)\b", text), text
        assert re.search(r"\b(you|your|I|my|me)\b", text, re.IGNORECASE), text


def test_human_reappraisals(humans, vignettes):
    train_ids = set(vignettes.loc[vignettes.pool == "train", "vignette_id"])
    assert set(humans.vignette_id) == train_ids
    per_vignette = humans.groupby("vignette_id").size()
    assert per_vignette.between(90, 110).all()
    assert 540 <= len(humans) <= 660
    assert set(humans.study) == {"1", "3", "4"}
    for study, prefix in [("1", "s1_r"), ("3", "s3_r"), ("4", "s4_r")]:
        assert humans.loc[humans.study == study, "reappraisal_id"].str.match(rf"^{prefix}\d{{4}}$").all()
    assert (humans.text.str.strip() != "").all()
    assert not humans.duplicated(["vignette_id", "text"]).any()
    # texts vary: many distinct sentence skeletons, 1..5 sentences
    n_sent = humans.text.map(count_sentences)
    assert n_sent.min() == 1 and n_sent.max() >= 4
    assert (n_sent <= 2).mean() > 0.5


def test_ids_unique_across_all_files(humans, gpt4, opponents):
    ids = list(humans.reappraisal_id) + list(gpt4.reappraisal_id) + list(opponents.answer_id)
    assert len(ids) == len(set(ids))


def test_gpt4_references(gpt4, vignettes):
    assert list(gpt4.columns) == ["reappraisal_id", "vignette_id", "text", "model", "data_origin"]
    assert (gpt4.model == "gpt-4-0314").all()
    assert gpt4.reappraisal_id.str.startswith("gpt4_").all()
    counts = gpt4.groupby("vignette_id").size()
    assert set(counts.index) == set(vignettes.loc[vignettes.pool == "train", "vignette_id"])
    assert counts.between(1, 3).all()
    for text in gpt4.text:
        assert count_sentences(text) <= 2
        assert re.search(r"\byou(r|rs|rself)?\b", text, re.IGNORECASE)


def test_opponents_cover_every_scenario(opponents, vignettes):
    assert list(opponents.columns) == ["answer_id", "vignette_id", "model", "text", "data_origin"]
    assert set(opponents.model) == {"deepseek-r1", "qwen2.5-72b"}
    counts = opponents.groupby(["vignette_id", "model"]).size()
    expected = pd.MultiIndex.from_product([sorted(vignettes.vignette_id), ["deepseek-r1", "qwen2.5-72b"]])
    assert sorted(counts.index) == sorted(expected)
    assert (counts == 2).all()
    assert not opponents.duplicated("text").any()


def test_ood_scenarios_are_ngram_disjoint(vignettes, humans, gpt4, opponents):
    train_ids = set(vignettes.loc[vignettes.pool == "train", "vignette_id"])
    train_side = all_ngrams(vignettes.loc[vignettes.pool == "train", "text"])
    train_side |= all_ngrams(humans.text) | all_ngrams(gpt4.text)
    train_side |= all_ngrams(opponents.loc[opponents.vignette_id.isin(train_ids), "text"])
    assert len(train_side) > 1000
    for _, row in vignettes[vignettes.pool == "ood"].iterrows():
        assert not (ngrams(row.text) & train_side), row.vignette_id


def test_held_out_answers_share_no_8gram_with_human_training_texts(humans, gpt4, opponents):
    human = all_ngrams(humans.text)
    assert not (human & all_ngrams(gpt4.text))
    assert not (human & all_ngrams(opponents.text))


def test_ratings_structure(ratings, humans, gpt4):
    assert ratings.rating.between(1, 7).all()
    assert 20_000 <= len(ratings) <= 30_000
    # each rated reappraisal exists in its study (GPT-4 references are rated in study 1)
    for study, g in ratings.groupby("study"):
        known = set(humans.loc[humans.study == study, "reappraisal_id"])
        if study == "1":
            known |= set(gpt4.reappraisal_id)
        assert set(g.reappraisal_id) == known, study  # every reappraisal rated, nothing unknown
        prefix = {"1": "s1_p", "3": "s3_p", "4": "s4_p"}[study]
        assert g.rater_id.str.match(rf"^{prefix}\d{{3}}$").all()
    # raters belong to one study only
    assert (ratings.groupby("rater_id").study.nunique() == 1).all()
    wide = ratings[ratings.dimension == "effectiveness"]
    assert not wide.duplicated(["rater_id", "reappraisal_id"]).any()
    assert wide.groupby("rater_id").size().between(20, 40).all()
    assert wide.groupby("reappraisal_id").size().between(8, 12).all()
    # complete: every (rater, reappraisal) row has all four dimensions
    assert (ratings.groupby(["rater_id", "reappraisal_id"]).size() == 4).all()
    # not too much mass at the scale ends
    assert ratings.rating.isin([1, 7]).mean() < 0.15


def test_truth_files_match_the_export(ratings, humans, gpt4, quality):
    sev = read("truth/rater_severity.csv")
    assert list(sev.columns) == ["study", "rater_id", "severity", "profile", "data_origin"]
    assert sorted(zip(sev.study, sev.rater_id)) == sorted(set(zip(ratings.study, ratings.rater_id)))
    assert 0.6 < sev.severity.astype(float).std() < 1.0
    assert sorted(quality.index) == sorted(list(humans.reappraisal_id) + list(gpt4.reappraisal_id))
    qv = read("truth/reappraisal_quality.csv")
    merged = qv.merge(pd.concat([humans[["reappraisal_id", "vignette_id"]], gpt4[["reappraisal_id", "vignette_id"]]]),
                      on="reappraisal_id", suffixes=("", "_export"))
    assert (merged.vignette_id == merged.vignette_id_export).all()
    scale = read("truth/study_scale.csv")
    assert list(scale.study) == ["1", "3", "4"]


def test_zero_variance_raters_are_exactly_the_documented_ones(ratings):
    sd = ratings.groupby(["study", "rater_id", "dimension"]).rating.std()
    zero = sorted(sd[sd == 0].index)
    planted = read("truth/constant_raters.csv")
    assert zero == sorted(zip(planted.study, planted.rater_id, planted.dimension))
    assert 1 <= len(zero) <= 4
    readme = (DEMO / "README.md").read_text(encoding="utf-8")
    for rater in planted.rater_id:
        assert rater in readme


# ---------------------------------------------------------------- planted structure


def test_quality_is_visible_in_the_ratings(ratings, quality):
    mean_rating = ratings.groupby("reappraisal_id").rating.mean()
    r = np.corrcoef(quality[mean_rating.index], mean_rating)[0, 1]
    assert r > 0.5
    per_dim = {}
    for dim, g in ratings.groupby("dimension"):
        m = g.groupby("reappraisal_id").rating.mean()
        per_dim[dim] = np.corrcoef(quality[m.index], m)[0, 1]
    assert max(per_dim, key=per_dim.get) == "effectiveness"
    assert all(v > 0.2 for v in per_dim.values())


def test_raters_of_each_profile_rate_by_their_own_profiles_reading(ratings, humans, vignettes):
    """Rater profiles are real variability: warm raters' ratings follow the warm reading more than the analytic
    one, and analytic raters' the other way round (the profiles' readings correlate about 0.8 on the humans)."""
    from reappraisal.data.demo_gold import PROFILES, SHARES, profile_qualities

    sev = read("truth/rater_severity.csv").astype({"study": str})
    assert set(sev.profile) == set(PROFILES)
    shares = sev.profile.value_counts(normalize=True)
    assert all(abs(shares[p] - s) < 0.1 for p, s in zip(PROFILES, SHARES))
    scenario = vignettes.set_index("vignette_id").text
    h = humans.set_index("reappraisal_id")
    q = pd.DataFrame([profile_qualities(t, scenario[v]) for t, v in zip(h.text, h.vignette_id)], index=h.index,
                     columns=list(PROFILES))
    eff = ratings[(ratings.dimension == "effectiveness") & ratings.reappraisal_id.isin(h.index)]
    eff = eff.merge(sev.rename(columns={"rater_id": "rater_id"}), on=["study", "rater_id"])
    eff["centered"] = eff.rating - eff.groupby("rater_id").rating.transform("mean")

    def corr(profile_of_raters, reading):
        g = eff[eff.profile == profile_of_raters]
        return np.corrcoef(g.centered, q.loc[g.reappraisal_id, reading])[0, 1]

    assert corr("warm", "warm") > corr("warm", "analytic") + 0.03
    assert corr("analytic", "analytic") > corr("analytic", "warm") + 0.03


def test_quality_is_the_worlds_reading_of_the_text(humans, vignettes, quality):
    from reappraisal.data.demo_gold import gold_quality

    feats = read("truth/reappraisal_features.csv").set_index("reappraisal_id")
    h = humans.set_index("reappraisal_id")
    scenario = vignettes.set_index("vignette_id").text
    # the reading's components are really read off the text, and the latent quality is that reading plus noise
    expected = np.array([gold_quality(t, scenario[v]) for t, v in zip(h.text, h.vignette_id)])
    assert (feats.loc[h.index].n_sentences.astype(int) == h.text.map(sentence_count)).all()
    noise = quality[h.index].to_numpy() - expected
    assert abs(noise.mean()) < 0.1 and 0.3 < noise.std() < 0.8
    # the components vary in the data (the world is not one feature)
    x = feats.loc[h.index]
    for col in ("address", "alternative", "relevance", "length_factor"):
        assert x[col].astype(float).std() > 0.15, col


def test_gpt4_references_are_above_most_humans(humans, gpt4, quality):
    q_h = quality[humans.reappraisal_id]
    q_g = quality[gpt4.reappraisal_id]
    assert q_h.quantile(0.5) < q_g.mean() < q_h.max()


def test_rater_severity_is_recoverable(ratings):
    sev = read("truth/rater_severity.csv").set_index("rater_id").severity.astype(float)
    r = ratings.copy()
    r["resid"] = r.rating - r.groupby(["reappraisal_id", "dimension"]).rating.transform("mean")
    est = r.groupby("rater_id").resid.mean()
    assert np.corrcoef(sev[est.index], est)[0, 1] > 0.8


def test_study_scales_differ(ratings):
    stats = ratings[ratings.study != "1"].groupby("study").rating.agg(["mean", "std"])
    s1 = ratings[ratings.reappraisal_id.str.startswith("s1_")].rating
    # study 3 lenient and compressed, study 4 harsher
    assert stats.loc["3", "mean"] > s1.mean() + 0.2
    assert stats.loc["3", "std"] < s1.std()
    assert stats.loc["4", "mean"] < s1.mean()


def test_demo_preset_ingest_mapping_matches_the_files():
    """config.yaml's declared mapping names files and columns that exist here."""
    cfg = yaml.safe_load((DEMO.parents[1] / "config.yaml").read_text(encoding="utf-8"))
    mapping = cfg["presets"]["demo"]["data"]["ingest"]
    truth_studies = set(read("truth/study_scale.csv").study)
    n_sources = 0
    for table, sources in mapping.items():
        for src in sources:
            n_sources += 1
            df = read(src["files"])
            declared = list(src["columns"].values()) + list(src.get("dimensions", {}).values())
            if "author_type_column" in src:
                declared.append(src["author_type_column"])
            assert set(declared) <= set(df.columns), (table, src["files"])
            if "study" in src:
                assert str(src["study"]) in truth_studies, (table, src["files"])
    assert n_sources == 1 + 5 + 3
