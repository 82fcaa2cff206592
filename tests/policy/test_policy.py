"""Policies: tokenizer, save/load offline, batched sampling, parsing, log-probs, chat adapter."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT

torch = pytest.importorskip("torch")

from crbc.policy import load_policy  # noqa: E402
from crbc.policy.prompting import (  # noqa: E402
    ACTIONS,
    EOS,
    INVALID_ACTION,
    chat_user_message,
    parse_chat,
    parse_tiny,
    tiny_prompt,
)
from crbc.policy.tiny import (  # noqa: E402
    TinyModelConfig,
    TinyPolicy,
    build_model,
    build_tokenizer,
    count_parameters,
    save_tiny,
)

BOARD = "######\n#P__O#\n#__X_#\n###__#\n###_##\n######"
SMALL = TinyModelConfig(hidden_size=32, intermediate_size=64, num_layers=2, num_heads=4)
SHIPPED = ["sokoban-tiny-weak", "sokoban-tiny-strong", "gridworld-tiny"]


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory) -> Path:
    tok = build_tokenizer()
    path = tmp_path_factory.mktemp("tiny")
    save_tiny(build_model(tok, SMALL, seed=3), tok, path, SMALL)
    return path


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)


# ---- tokenizer and prompt ----------------------------------------------------------------------


def test_tokenizer_one_token_per_character_and_action_word():
    tok = build_tokenizer()
    text = tiny_prompt("#_OX\n√PSG") + "left" + EOS
    ids = tok(text, add_special_tokens=False)["input_ids"]
    tokens = tok.convert_ids_to_tokens(ids)
    assert tokens == ["<bos>", "#", "_", "O", "X", "\n", "√", "P", "S", "G", "<sep>", "left", "<eos>"]
    assert tok.decode(ids) == text
    assert tok.unk_token_id not in ids
    for a in ACTIONS:
        assert len(tok(a, add_special_tokens=False)["input_ids"]) == 1


def test_tokenizer_unknown_characters_are_unk():
    tok = build_tokenizer()
    ids = tok("#z@", add_special_tokens=False)["input_ids"]
    assert ids[1:] == [tok.unk_token_id, tok.unk_token_id]


def test_tokenizer_round_trip_through_disk(tmp_path):
    tok = build_tokenizer()
    tok.save_pretrained(tmp_path)
    from transformers import AutoTokenizer

    again = AutoTokenizer.from_pretrained(tmp_path, local_files_only=True)
    text = tiny_prompt(BOARD) + "up" + EOS
    assert again(text, add_special_tokens=False)["input_ids"] == tok(text, add_special_tokens=False)["input_ids"]
    assert again.pad_token == "<pad>" and again.sep_token == "<sep>" and again.bos_token == "<bos>"


# ---- parsing ------------------------------------------------------------------------------------


@pytest.mark.parametrize("tokens,expected", [
    (["left", "<eos>"], "left"), (["up", "<eos>", "<pad>"], "up"), (["left"], INVALID_ACTION),
    (["left", "left", "<eos>"], INVALID_ACTION), (["#", "<eos>"], INVALID_ACTION), ([], INVALID_ACTION),
    (["<eos>"], INVALID_ACTION),
])
def test_parse_tiny(tokens, expected):
    assert parse_tiny(tokens) == expected


@pytest.mark.parametrize("text,expected", [
    ("<action>left</action>", "left"), ("I think <action> Down </action> now", "down"),
    ("<ACTION>RIGHT</ACTION>", "right"), ("<action>up</action><action>down</action>", "up"),
    ("left", INVALID_ACTION), ("<action>jump</action>", INVALID_ACTION),
    ("<action>left", INVALID_ACTION), ("", INVALID_ACTION), ("<action></action>", INVALID_ACTION),
])
def test_parse_chat(text, expected):
    assert parse_chat(text) == expected


# ---- tiny model ---------------------------------------------------------------------------------


def test_default_model_is_about_a_million_parameters_or_less():
    tok = build_tokenizer()
    n = count_parameters(build_model(tok))
    assert 300_000 < n < 1_500_000


def test_save_load_round_trip_offline(tiny_dir, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    files = {p.name for p in tiny_dir.iterdir()}
    assert {"model.safetensors", "config.json", "tokenizer.json", "crbc_policy.json"} <= files
    assert not any(name.endswith((".bin", ".pt", ".pkl")) for name in files)
    tok = build_tokenizer()
    fresh = build_model(tok, SMALL, seed=3)
    policy = load_policy(tiny_dir)
    assert isinstance(policy, TinyPolicy) and policy.name == str(tiny_dir)
    ids = tok(tiny_prompt(BOARD), add_special_tokens=False, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        assert torch.equal(fresh(input_ids=ids).logits, policy.model(input_ids=ids).logits)


def test_policy_name_is_the_path_as_given(tiny_dir):
    assert load_policy(str(tiny_dir)).name == str(tiny_dir)


def test_load_policy_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_policy(tmp_path / "missing")
    with pytest.raises(ValueError):
        load_policy(tmp_path)


def _valid(results, n):
    assert len(results) == n
    for action, raw in results:
        assert action in ACTIONS or action == INVALID_ACTION
        assert isinstance(raw, str)


def test_act_same_generator_seed_same_output(tiny_dir):
    policy = load_policy(tiny_dir)
    boards = [BOARD] * 6
    a = policy.act(boards, 1.0, torch.Generator().manual_seed(5))
    b = policy.act(boards, 1.0, torch.Generator().manual_seed(5))
    _valid(a, 6)
    assert a == b


def test_act_batched_matches_one_at_a_time_with_per_row_generators(tiny_dir):
    policy = load_policy(tiny_dir)
    boards = [BOARD, BOARD.replace("P", "_", 1).replace("#__X", "#P_X"), BOARD]
    batched = policy.act(boards, 1.0, [torch.Generator().manual_seed(i) for i in range(3)])
    alone = [policy.act([b], 1.0, [torch.Generator().manual_seed(i)])[0] for i, b in enumerate(boards)]
    _valid(batched, 3)
    assert batched == alone


def test_act_greedy_is_deterministic_and_handles_empty(tiny_dir):
    policy = load_policy(tiny_dir)
    assert policy.act([BOARD, BOARD], 0.0, None) == policy.act([BOARD, BOARD], 0.0, None)
    assert policy.act([], 1.0, None) == []


def test_act_with_left_padding_matches_unpadded(tiny_dir):
    policy = load_policy(tiny_dir)
    small = "####\n#P_#\n####"
    mixed = policy.act([BOARD, small], 0.0, None)
    assert mixed[1] == policy.act([small], 0.0, None)[0]
    assert mixed[0] == policy.act([BOARD], 0.0, None)[0]


def test_action_logprobs(tiny_dir):
    policy = load_policy(tiny_dir)
    boards = [BOARD] * len(ACTIONS)
    lp = policy.action_logprobs(boards, list(ACTIONS))
    assert lp.shape == (len(ACTIONS),) and lp.requires_grad
    lp_ = lp.detach()
    assert torch.all(lp_ < 0) and float(lp_.exp().sum()) <= 1.0 + 1e-6
    # by hand: log p(word | prompt) + log p(<eos> | prompt, word)
    tok = policy.tokenizer
    ids = tok(tiny_prompt(BOARD) + "down" + EOS, add_special_tokens=False, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        logp = torch.log_softmax(policy.model(input_ids=ids).logits[0].float(), -1)
    n = ids.shape[1]
    expected = logp[n - 3, ids[0, n - 2]] + logp[n - 2, ids[0, n - 1]]
    assert float(lp_[1]) == pytest.approx(float(expected), abs=1e-5)
    with pytest.raises(ValueError):
        policy.action_logprobs([BOARD], [INVALID_ACTION])


def _force(policy, words_per_call):
    """Make the LM head write the given token at each successive forward call."""
    tok = policy.tokenizer
    calls = []

    def hook(module, args, output):  # noqa: ARG001
        word = words_per_call[min(len(calls), len(words_per_call) - 1)]
        calls.append(word)
        bias = torch.full((len(tok),), -50.0)
        bias[tok.convert_tokens_to_ids(word)] = 50.0
        return output * 0 + bias

    return policy.model.lm_head.register_forward_hook(hook)


@pytest.mark.parametrize("words,expected", [
    (["left", "<eos>"], ("left", "left<eos>")),
    (["left"], (INVALID_ACTION, "leftleftleft")),  # no <eos> within the cap
    (["#", "<eos>"], (INVALID_ACTION, "#<eos>")),
])
def test_act_parses_what_the_model_writes(tiny_dir, words, expected):
    policy = load_policy(tiny_dir)
    handle = _force(policy, words)
    try:
        got = policy.act([BOARD] * 2, 1.0, torch.Generator().manual_seed(0))
    finally:
        handle.remove()
    assert got == [expected] * 2


# ---- chat adapter -------------------------------------------------------------------------------

CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def make_chat_model(path: Path) -> Path:
    """A random tiny Qwen2 with a character-level tokenizer and a chat template (no downloads)."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    chars = [chr(c) for c in range(32, 127)] + ["\n", "√"]
    vocab = {t: i for i, t in enumerate(specials + chars + ["<unk>"])}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    core.decoder = decoders.Fuse()
    core.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials])
    tok = PreTrainedTokenizerFast(tokenizer_object=core, eos_token="<|im_end|>",
                                  pad_token="<|endoftext|>", unk_token="<unk>")
    tok.chat_template = CHAT_TEMPLATE
    tok.save_pretrained(path)
    cfg = Qwen2Config(vocab_size=len(vocab), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048,
                      eos_token_id=vocab["<|im_end|>"], pad_token_id=vocab["<|endoftext|>"],
                      tie_word_embeddings=True)
    torch.manual_seed(0)
    Qwen2ForCausalLM(cfg).save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def chat_dir(tmp_path_factory) -> Path:
    return make_chat_model(tmp_path_factory.mktemp("chat"))


def test_chat_adapter_is_detected_and_acts(chat_dir, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from crbc.envs import make
    from crbc.policy.chat import ChatPolicy

    policy = load_policy(chat_dir, max_new_tokens=6)
    assert isinstance(policy, ChatPolicy) and policy.name == str(chat_dir)
    env = make("sokoban-6x6-v0")
    env.reset(seed=1)
    obs = policy.observation(env)
    assert env.render() in obs and env.legend() in obs and "<action>" in obs
    prompt = policy.prompt(obs)
    assert prompt.startswith("<|im_start|>user\n") and prompt.endswith("<|im_start|>assistant\n")
    gen = torch.Generator().manual_seed(0)
    results = policy.act([obs, chat_user_message("#P#", "legend")], 1.0, gen)
    _valid(results, 2)
    assert all(a == INVALID_ACTION for a, _ in results)  # a random model does not write tags


def test_chat_adapter_parses_generated_tokens(chat_dir):
    policy = load_policy(chat_dir)
    tok = policy.tokenizer
    ids = tok("<action>right</action>", add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
    assert policy.parse(ids) == ("right", "<action>right</action><|im_end|>")
    assert policy.parse(tok("go right", add_special_tokens=False)["input_ids"])[0] == INVALID_ACTION
    lp = policy.action_logprobs(["hello"] * 2, ["up", "down"])
    assert lp.shape == (2,) and torch.all(lp < 0)


# ---- shipped checkpoints ------------------------------------------------------------------------


@pytest.mark.parametrize("name", SHIPPED)
@pytest.mark.slow
def test_shipped_checkpoint_loads_offline(name):
    path = ROOT / "models" / name
    assert path.is_dir(), f"models/{name} is part of the repository"
    size = sum(p.stat().st_size for p in path.iterdir())
    assert size < 10 * 2**20
    code = (
        "import sys, json, torch\n"
        "from crbc.policy import load_policy\n"
        "from crbc.envs import make\n"
        f"p = load_policy({str(path)!r})\n"
        "env = make(json.load(open(sys.argv[1]))['config']['env']); env.reset(seed=1_000_000)\n"
        "out = p.act([p.observation(env)] * 4, 0.0, None)\n"
        "print(json.dumps(out))\n"
    )
    env = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PATH": "/usr/bin:/bin",
           "PYTHONPATH": str(ROOT)}
    res = subprocess.run([sys.executable, "-c", code, str(path / "card.json")], capture_output=True,
                         text=True, env=env, cwd=ROOT, timeout=120)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert all(a in ACTIONS for a, _ in out)  # greedy tiny policy writes a real action
    card = json.loads((path / "card.json").read_text())
    assert {"command", "config", "params", "dataset", "training", "evaluation"} <= card.keys()
    assert card["evaluation"]["seeds"].startswith("1000000")


def test_importing_the_policy_package_does_not_import_torch():
    code = "import sys, crbc.policy, crbc.policy.pretrain, crbc.policy.generate; print('torch' in sys.modules)"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "False"


def test_response_logprobs_scores_raw_invalid_responses(tiny_dir):
    policy = load_policy(tiny_dir)
    lp = policy.response_logprobs([BOARD, BOARD], ["leftO<sep>", "up<eos>"]).detach()
    assert lp.shape == (2,) and torch.isfinite(lp).all() and torch.all(lp < 0)
    with torch.no_grad():
        ref = policy.action_logprobs([BOARD], ["up"])[0]
    assert float(lp[1]) == pytest.approx(float(ref), abs=1e-5)


# ---- pretrain recipe ----------------------------------------------------------------------------

PRETRAIN_ARGS = ["--env", "gridworld-6x6-v0", "--seed", "4", "--states", "48", "--epochs", "1",
                 "--batch-size", "16", "--hidden-size", "32", "--intermediate-size", "64",
                 "--layers", "1", "--heads", "4", "--eval-seeds", "2", "--eval-group", "2",
                 "--threads", "1", "--quiet"]


def test_pretrain_command_reproduces_its_checkpoint(tmp_path, monkeypatch):
    from crbc.cli.main import main

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["pretrain", "--out", str(a), *PRETRAIN_ARGS]) == 0
    assert main(["pretrain", "--out", str(b), *PRETRAIN_ARGS]) == 0
    assert (a / "model.safetensors").read_bytes() == (b / "model.safetensors").read_bytes()
    card = json.loads((a / "card.json").read_text())
    assert card["config"]["states"] == 48 and card["dataset"]["states"] == 48
    assert card["command"].startswith(f"python -m crbc pretrain --out {a}")
    assert card["params"] > 0 and "train_seconds" in card["training"]
    ev = card["evaluation"]
    assert ev["seeds"] == "1000000-1000001" and 0 <= ev["success_rate"] <= 1
    assert 0 <= ev["mixed_group_share"] <= 1
    assert isinstance(load_policy(a), TinyPolicy)


@pytest.mark.parametrize("change,needle", [
    (["--states", "0"], "--states"), (["--label-noise", "2"], "--label-noise"),
    (["--env", "chess-v0"], "unknown env"), (["--epochs", "x"], "invalid int"),
])
def test_pretrain_refuses_bad_args(tmp_path, capsys, change, needle):
    from crbc.cli.main import main

    assert main(["pretrain", "--out", str(tmp_path / "m"), *PRETRAIN_ARGS, *change]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("crbc pretrain: error:") and needle in err
    assert not (tmp_path / "m").exists()


def test_concurrent_loads_do_not_race(tmp_path):
    """Two app sessions may load a checkpoint at the same moment; transformers' meta-device
    construction is process-wide state, so unserialised loads fail with "Cannot copy out of meta
    tensor" (every load of 8 threads x 4 did before the lock)."""
    import threading

    from crbc.policy import load_policy

    shipped = ROOT / "models" / "sokoban-tiny-weak"
    errors: list[str] = []

    def work():
        for _ in range(2):
            try:
                p = load_policy(shipped)
                assert p.model.lm_head.weight.data_ptr() == p.model.model.embed_tokens.weight.data_ptr()
            except Exception as e:  # noqa: BLE001 - collect, then report
                errors.append(repr(e)[:200])

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
