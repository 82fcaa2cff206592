"""Generation: batched groups, determinism, rollout contents, and the ``generate`` command."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.paths import ROOT

torch = pytest.importorskip("torch")

from crbc.cli.generate import parse_seeds  # noqa: E402
from crbc.cli.main import main  # noqa: E402
from crbc.cli.progress import ProgressBar  # noqa: E402
from crbc.envs import make  # noqa: E402
from crbc.io.rollouts import read_rollouts  # noqa: E402
from crbc.policy import load_policy  # noqa: E402
from crbc.policy.generate import generate_group, generate_groups  # noqa: E402
from crbc.policy.prompting import ACTIONS, INVALID_ACTION  # noqa: E402
from crbc.policy.tiny import TinyModelConfig, build_model, build_tokenizer, save_tiny  # noqa: E402

ENV = "sokoban-6x6-v0"
SMALL = TinyModelConfig(hidden_size=32, intermediate_size=64, num_layers=2, num_heads=4)


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    """The weak shipped checkpoint when present (mixed outcomes), else a random tiny model."""
    shipped = ROOT / "models" / "sokoban-tiny-weak"
    if shipped.is_dir():
        return shipped
    tok = build_tokenizer()
    path = tmp_path_factory.mktemp("tiny")
    save_tiny(build_model(tok, SMALL, seed=1), tok, path, SMALL)
    return path


@pytest.fixture(scope="module")
def policy(model_dir):
    return load_policy(model_dir)


def test_parse_seeds():
    assert parse_seeds("0-3") == [0, 1, 2, 3]
    assert parse_seeds("1,5,9") == [1, 5, 9]
    assert parse_seeds("7") == [7]
    assert parse_seeds("0-1, 10") == [0, 1, 10]
    for bad in ["", "a", "3-1", "1,,2", "-4", "1-2-3", "1,1", "1.5"]:
        with pytest.raises(ValueError):
            parse_seeds(bad)


def test_group_contents(policy):
    group = generate_group(ENV, 3, 4, policy, temperature=1.0, max_steps=6)
    assert group.group == f"{ENV}/seed-3" and len(group) == 4
    env = make(ENV, max_steps=6)
    start, _ = env.reset(seed=3)
    for i, r in enumerate(group):
        assert r.rollout == i and r.group == group.group
        assert r.steps[0].anchor == start  # every rollout starts from the same anchor
        assert 1 <= len(r.steps) <= 6
        assert not (r.success and r.truncated)
        assert r.success or r.truncated
        assert r.score == pytest.approx(sum(s.reward for s in r.steps))
        assert r.meta == {"env": ENV, "seed": 3, "policy": policy.name, "temperature": 1.0,
                          "max_steps": 6}
        # replay: the anchors are the env states before each executed action
        env.reset(seed=3)
        for s in r.steps:
            assert s.anchor == env.anchor() and s.obs == env.render()
            assert s.action in ACTIONS or s.action == INVALID_ACTION
            _, reward, *_ = env.step(s.action)
            assert s.reward == reward


def test_same_seed_same_groups_and_groups_independent_of_batch(policy):
    a = generate_groups(ENV, [0, 1], 3, policy, 1.0, max_steps=5, rng=7)
    b = generate_groups(ENV, [0, 1], 3, policy, 1.0, max_steps=5, rng=7)
    assert a == b
    alone = generate_group(ENV, 1, 3, policy, 1.0, max_steps=5, rng=7)
    assert alone == a[1]
    other = generate_groups(ENV, [0, 1], 3, policy, 1.0, max_steps=5, rng=8)
    assert [g.group for g in other] == [g.group for g in a]


@pytest.fixture(scope="module")
def random_policy(tmp_path_factory):
    """A random tiny model: near-uniform over all 18 tokens, so responses of one, two and three
    tokens, invalid ones and first tokens outside the memo's speculation all occur."""
    tok = build_tokenizer()
    path = tmp_path_factory.mktemp("random-tiny")
    save_tiny(build_model(tok, SMALL, seed=3), tok, path, SMALL)
    return load_policy(path)


@pytest.mark.parametrize("temperature", [1.0, 0.7, 0.0])
def test_memoised_sampling_matches_plain_sampling(policy, random_policy, temperature):
    """The fast path (NextTokenMemo: each distinct prompt read once per batch) against the slow,
    obvious one (a prefill per step): the same episodes, with fewer model reads."""
    from crbc.policy.base import NextTokenMemo

    for pol, steps in ((policy, 15), (random_policy, 8)):
        kw = dict(temperature=temperature, max_steps=steps, rng=11)
        plain = generate_groups(ENV, [4, 5, 6], 6, pol, memoize=False, **kw)
        fast = generate_groups(ENV, [4, 5, 6], 6, pol, **kw)
        assert fast == plain
    # mixed prompt lengths (an 8x8 and a 6x6 Sokoban board) and repeated prompts in one batch
    grid, sok = make("sokoban-8x8-2box-v0"), make(ENV)
    grid.reset(seed=0)
    sok.reset(seed=0)
    obs = [random_policy.observation(e) for e in (grid, sok, sok, grid, sok)]
    gens = lambda: [torch.Generator().manual_seed(i) for i in range(len(obs))]  # noqa: E731
    memo = NextTokenMemo()
    once = random_policy.act(obs, temperature, gens(), memo=memo)
    assert once == random_policy.act(obs, temperature, gens())
    prompts = {tuple(random_policy.tokenizer(random_policy.prompt(o), add_special_tokens=False)["input_ids"])
               for o in obs}
    assert len(prompts) == 2 and prompts <= set(memo.table)
    reads = memo.forwards
    assert random_policy.act(obs, temperature, gens(), memo=memo) == once
    assert memo.forwards == reads or temperature > 0  # greedy: everything is known already


def test_memo_reads_each_board_once(policy):
    """On a real batch the memo reads far fewer sequences than there are steps."""
    from crbc.policy.base import NextTokenMemo

    memo = NextTokenMemo()
    seen = []
    orig = policy.act

    def act(obs, temperature, gens, memo=None):
        seen.extend(obs)
        return orig(obs, temperature, gens, memo=memo)

    policy.act, saved = act, policy.act
    try:
        import crbc.policy.generate as gen

        make_memo, gen._memo_for = gen._memo_for, lambda p, m: memo
        try:
            generate_groups(ENV, list(range(8)), 8, policy, 1.0, max_steps=15, rng=0)
        finally:
            gen._memo_for = make_memo
    finally:
        policy.act = saved
    boards = len(set(seen))
    assert len(seen) > 2 * boards  # episodes revisit boards
    assert memo.forwards <= boards * (1 + memo.speculate) + len(seen) // 10


def test_progress_called_until_done(policy):
    seen = []
    generate_groups(ENV, [0], 2, policy, 1.0, max_steps=3, progress=lambda d, t: seen.append((d, t)))
    assert seen and seen[-1] == (2, 2) and all(t == 2 for _, t in seen)


def test_text_progress_bar(capsys):
    bar = ProgressBar("gen", unit="episodes")
    bar(1, 4)
    bar(4, 4)
    err = capsys.readouterr().err
    assert "gen: 100%" in err and "4/4" in err and err.endswith("\n")
    train_bar = ProgressBar("train", total=2)  # the training loop's way: total fixed, info text
    train_bar(1, "loss +0.1")
    train_bar(2, "loss +0.2")
    err = capsys.readouterr().err
    assert "2/2" in err and "loss +0.2" in err


def test_cli_writes_a_valid_file_deterministically(model_dir, tmp_path, capsys):
    out1, out2 = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    args = ["generate", "--env", ENV, "--model", str(model_dir), "--seeds", "0-1,5",
            "--group-size", "2", "--max-steps", "4", "--threads", "1"]
    assert main(args + ["-o", str(out1)]) == 0
    assert main(args + ["-o", str(out2), "--quiet"]) == 0
    assert out1.read_bytes() == out2.read_bytes()
    groups = read_rollouts(out1)
    assert [g.group for g in groups] == [f"{ENV}/seed-{s}" for s in (0, 1, 5)]
    assert all(len(g) == 2 for g in groups)
    err = capsys.readouterr().err
    assert "episodes" in err and "wrote 3 groups" in err


@pytest.mark.parametrize("change,needle", [
    (["--seeds", "x"], "seed"), (["--seeds", "5-1"], "seed"), (["--group-size", "0"], "group-size"),
    (["--temperature", "-1"], "temperature"), (["--max-steps", "0"], "max-steps"),
    (["--env", "chess-v0"], "unknown env"), (["--model", "no/such/folder"], "not found"),
])
def test_cli_refuses_bad_args(model_dir, tmp_path, capsys, change, needle):
    out = tmp_path / "x.jsonl"
    base = {"--env": ENV, "--model": str(model_dir), "--seeds": "0", "--group-size": "1"}
    base[change[0]] = change[1]
    argv = ["generate", *[x for kv in base.items() for x in kv], "-o", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("crbc generate: error:") and needle in err and "\n" not in err
    assert not out.exists()


def test_cli_requires_output(model_dir, capsys):
    assert main(["generate", "--env", ENV, "--model", str(model_dir)]) == 2
    assert "-o/--output" in capsys.readouterr().err
