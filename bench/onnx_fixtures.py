"""ONNX exports of real architectures for `quco-emu import`: the test fixtures and the full sizes.

    python bench/onnx_fixtures.py                       # tests/fixtures/onnx/*.onnx (tiny, committed)
    python bench/onnx_fixtures.py --full --out /tmp/onnx-full [--keep-weights] [--only whisper-tiny]
    python bench/onnx_fixtures.py --whisper-generation 20       # launches of a KV-cache generation loop

Needs torch and transformers (not installed by `make test`: CI does not install torch). Every
model is built from its published configuration with random weights (nothing is downloaded)
and exported with `torch.onnx.export` as a user of torch 2.13 would: its default exporter
(`dynamo=True`; node names like `node_linear_3`, the module path in each node's metadata).
Each is also exported with the older TorchScript exporter (`dynamo=False`; NAME-torchscript.onnx,
node names like `/model/encoder/layers.0/fc1/MatMul`), whose graphs compute masks and
positions through Expand/Where/ConstantOfShape, where `onnx.shape_inference` loses the shapes.
It cannot export transformers 5's packed-sequence check (`aten::diff`); the export replaces it
by "one sequence per row", which is what these inputs are.

The fixtures are shrunk (few layers, small dimensions where the test does not check the
real ones) and their weights are left out: every float initializer with more than
`KEEP_ELEMENTS` elements keeps its dims and loses its data, so each file stays well under
1 MB. `quco-emu import` reads only dims. Next to each model, `NAME.expected.json` lists the
true shape of every torch.nn.Linear / Conv1d / Conv2d (and GPT-2's Conv1D) call, recorded by
forward hooks on the modules while the export input runs: the independent expectation
tests/test_onnx_fixtures.py compares the import with.

ResNet-18 and MobileNetV2 are written here from their papers (He et al. 2016, Table 1;
Sandler et al. 2018, Table 2), layer for layer as torchvision builds them: the torchvision
wheel the package index offers is built for another torch.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import torch
from torch import nn

KEEP_ELEMENTS = 64      # small initializers (shapes, axes, scalars) keep their data
FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "onnx"


# ---------------------------------------------------------------- vision models, by hand
def _conv_bn(cin, cout, k, stride=1, groups=1, act=True):
    layers = [nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    return nn.Sequential(*layers, nn.ReLU6(inplace=True)) if act else nn.Sequential(*layers)


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                           if stride != 1 or cin != cout else None)

    def forward(self, x):
        y = self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x)))))
        return self.relu(y + (self.downsample(x) if self.downsample is not None else x))


class ResNet18(nn.Module):
    """He et al., Deep Residual Learning, Table 1 (18-layer): 7x7/2 conv, 3x3/2 max pool, four
    stages of two basic blocks (64, 128, 256, 512 channels), average pool, 1000-way fc."""

    def __init__(self, width=64, classes=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        widths, cin = [width, 2 * width, 4 * width, 8 * width], width
        for i, w in enumerate(widths, 1):
            setattr(self, f"layer{i}", nn.Sequential(BasicBlock(cin, w, 1 if i == 1 else 2), BasicBlock(w, w, 1)))
            cin = w
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        hidden = cin * expand
        layers = [_conv_bn(cin, hidden, 1)] if expand != 1 else []
        layers += [_conv_bn(hidden, hidden, 3, stride, groups=hidden), _conv_bn(hidden, cout, 1, act=False)]
        self.conv = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.conv(x) if self.residual else self.conv(x)


class MobileNetV2(nn.Module):
    """Sandler et al., MobileNetV2, Table 2: (expansion t, channels c, repeats n, stride s)."""
    SETTINGS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                (6, 320, 1, 1)]

    def __init__(self, classes=1000, scale=1.0):
        super().__init__()
        cin = int(32 * scale)
        layers = [_conv_bn(3, cin, 3, 2)]
        for t, c, n, s in self.SETTINGS:
            for i in range(n):
                layers.append(InvertedResidual(cin, int(c * scale), s if i == 0 else 1, t))
                cin = int(c * scale)
        last = 1280 if scale <= 1 else int(1280 * scale)
        layers.append(_conv_bn(cin, last, 1))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(last, classes))

    def forward(self, x):
        return self.classifier(torch.flatten(nn.functional.adaptive_avg_pool2d(self.features(x), 1), 1))


# ---------------------------------------------------------------- transformer models (HF configs)
class WhisperStep(nn.Module):
    """Encoder over 30 s of audio and one decoder step (no cache), returning the logits."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_features, decoder_input_ids):
        return self.model(input_features=input_features, decoder_input_ids=decoder_input_ids, use_cache=False).logits


class Logits(nn.Module):
    """The model called with keyword arguments (their names are the ONNX inputs'); one of its outputs."""

    def __init__(self, model, names, output=0, **fixed):
        super().__init__()
        self.model, self.names, self.output, self.fixed = model, names, output, fixed

    def forward(self, *args):
        return self.model(**dict(zip(self.names, args)), **self.fixed)[self.output]


def whisper(full):
    from transformers import WhisperConfig, WhisperForConditionalGeneration
    # openai/whisper-tiny config.json; the fixture keeps the dims (the test checks them), 1 + 1 layers
    layers = 4 if full else 1
    cfg = WhisperConfig(d_model=384, encoder_layers=layers, decoder_layers=layers, encoder_attention_heads=6,
                        decoder_attention_heads=6, encoder_ffn_dim=1536, decoder_ffn_dim=1536, num_mel_bins=80,
                        max_source_positions=1500, max_target_positions=448, vocab_size=51865)
    model = WhisperStep(WhisperForConditionalGeneration(cfg))
    return model, (torch.zeros(1, 80, 3000), torch.zeros(1, 1, dtype=torch.long)), ["input_features", "decoder_input_ids"]


def t5(full):
    from transformers import T5Config, T5ForConditionalGeneration
    # google-t5/t5-small config.json; the bundled workload's 512 + 512 tokens
    cfg = (T5Config(d_model=512, d_ff=2048, num_heads=8, d_kv=64, num_layers=6, num_decoder_layers=6, vocab_size=32128)
           if full else T5Config(d_model=64, d_ff=128, num_heads=2, d_kv=32, num_layers=1, num_decoder_layers=1,
                                 vocab_size=1000))
    seq = 512 if full else 16
    ids = torch.zeros(1, seq, dtype=torch.long)
    names = ["input_ids", "attention_mask", "decoder_input_ids"]
    return Logits(T5ForConditionalGeneration(cfg), names, use_cache=False), (ids, torch.ones_like(ids), ids.clone()), names


def albert(full, classifier=False):
    from transformers import AlbertConfig, AlbertForSequenceClassification, AlbertModel
    # albert/albert-base-v2 config.json
    cfg = (AlbertConfig(embedding_size=128, hidden_size=768, intermediate_size=3072, num_attention_heads=12,
                        num_hidden_layers=12, vocab_size=30000)
           if full else AlbertConfig(embedding_size=32, hidden_size=64, intermediate_size=128, num_attention_heads=2,
                                     num_hidden_layers=2, vocab_size=1000))
    seq = (128 if classifier else 512) if full else 32
    names = ["input_ids", "attention_mask"]
    # AlbertModel: the pooled output, so the pooler stays in the graph (the paper's 74 counts it)
    model = Logits(AlbertForSequenceClassification(cfg) if classifier else AlbertModel(cfg), names,
                   0 if classifier else 1)
    ids = torch.zeros(1, seq, dtype=torch.long)
    return model, (ids, torch.ones_like(ids)), names


def gpt2(full):
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = (GPT2Config(n_layer=2, n_embd=768, n_head=12) if full
           else GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=1000, n_positions=64))
    return Logits(GPT2LMHeadModel(cfg), ["input_ids"], use_cache=False), \
        (torch.zeros(1, 128 if full else 16, dtype=torch.long),), ["input_ids"]


def resnet18(full):
    return ResNet18(64 if full else 16, 1000 if full else 10), (torch.zeros(1, 3, 224 if full else 64, 224 if full else 64),), \
        ["images"]


def mobilenet_v2(full):
    return MobileNetV2(1000 if full else 10, 1.0 if full else 0.25), \
        (torch.zeros(1, 3, 224 if full else 64, 224 if full else 64),), ["images"]


MODELS = {"whisper-tiny": whisper, "t5-small": t5, "albert-base-v2": albert,
          "albert-classifier": lambda full: albert(full, classifier=True), "gpt2": gpt2,
          "resnet18": resnet18, "mobilenet-v2": mobilenet_v2}
TORCHSCRIPT = list(MODELS)      # also exported with dynamo=False (NAME-torchscript.onnx)


# ---------------------------------------------------------------- the true shapes, from the modules
def _record(model: nn.Module, args) -> list[dict]:
    """Every Linear / Conv1d / Conv2d / HF Conv1D call with the shapes it ran on."""
    seen, hooks = [], []

    def hook(mod, inputs, _output):
        x = inputs[0]
        if isinstance(mod, (nn.Conv1d, nn.Conv2d)):
            seen.append({"kind": "conv", "in_channels": mod.in_channels, "out_channels": mod.out_channels,
                         "kernel": list(mod.kernel_size), "stride": list(mod.stride), "padding": list(mod.padding),
                         "dilation": list(mod.dilation), "groups": mod.groups, "input": list(x.shape[2:]),
                         "batch": x.shape[0]})
        else:   # Linear: weight [out, in]; GPT-2's Conv1D: weight [in, out]
            k, n = (mod.in_features, mod.out_features) if isinstance(mod, nn.Linear) else tuple(mod.weight.shape)
            seen.append({"kind": "linear", "m": x.numel() // k, "k": k, "n": n})

    for name, mod in model.named_modules():
        if isinstance(mod, (nn.Linear, nn.Conv1d, nn.Conv2d)) or type(mod).__name__ == "Conv1D":
            hooks.append(mod.register_forward_hook(hook))
    with torch.no_grad():
        model(*args)
    for h in hooks:
        h.remove()
    return seen


def strip_weights(path: Path) -> None:
    """Float initializers above KEEP_ELEMENTS keep their dims and lose their data."""
    import onnx
    m = onnx.load(str(path))     # the exporter may have put the weights in an external file
    for init in m.graph.initializer:
        n = 1
        for d in init.dims:
            n *= d
        if n > KEEP_ELEMENTS and init.data_type in (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16):
            for f in ("raw_data", "float_data", "int32_data", "external_data", "data_location"):
                init.ClearField(f)
    for node in m.graph.node:      # the exporter's Python stack traces name this machine's paths
        keep = [p for p in node.metadata_props if p.key != "pkg.torch.onnx.stack_trace"]
        del node.metadata_props[:]
        node.metadata_props.extend(keep)
    onnx.save(m, str(path))
    Path(f"{path}.data").unlink(missing_ok=True)


def export(name: str, out: Path, full: bool, keep_weights: bool, dynamo: bool) -> Path:
    torch.manual_seed(0)
    model, args, inputs = MODELS[name](full)
    model.eval()
    name += "" if dynamo else "-torchscript"
    path = out / f"{name}.onnx"
    expected = _record(model, args)
    if not dynamo:
        try:    # transformers 5: torch.diff has no TorchScript ONNX export; our inputs are one sequence a row
            import transformers.masking_utils as masks
            masks.find_packed_sequence_indices = lambda position_ids: None
        except ImportError:
            pass
    with torch.no_grad():   # the dynamo exporter writes opset 18, the TorchScript one 17
        torch.onnx.export(model, args, str(path), input_names=inputs, output_names=["output"], dynamo=dynamo,
                          **({} if dynamo else {"opset_version": 17}))
    if keep_weights and Path(f"{path}.data").exists():   # one self-contained file, as users share them
        import onnx
        onnx.save(onnx.load(str(path)), str(path))
        Path(f"{path}.data").unlink()
    if not keep_weights:
        strip_weights(path)
    (out / f"{name}.expected.json").write_text(json.dumps(
        {"model": name, "full_size": full, "input_shapes": [list(a.shape) for a in args], "modules": expected},
        indent=1) + "\n", encoding="utf-8")
    return path


def whisper_generation_launches(steps: int = 20) -> list[int]:
    """Linear/Conv launches of Whisper-Tiny (published sizes) per call of a generation loop with
    the key/value cache, as transformers' generate() runs it: the encoder once, then one decoder
    step per token (each step's output projection included). [encoder, step 1, step 2, ...]."""
    model, (features, token), _ = whisper(full=True)
    hf = model.model.eval()
    counts, hooks = [0], []
    for mod in hf.modules():
        if isinstance(mod, (nn.Linear, nn.Conv1d)):
            hooks.append(mod.register_forward_hook(lambda *_: counts.__setitem__(-1, counts[-1] + 1)))
    with torch.no_grad():
        encoded = hf.model.encoder(features)
        cache, ids = None, token
        for _ in range(steps):
            counts.append(0)
            out = hf(encoder_outputs=encoded, decoder_input_ids=ids, past_key_values=cache, use_cache=True)
            cache, ids = out.past_key_values, out.logits[:, -1:].argmax(-1)
    for h in hooks:
        h.remove()
    return counts


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="the published sizes (default: the shrunk fixtures)")
    ap.add_argument("--out", type=Path, default=FIXTURES)
    ap.add_argument("--keep-weights", action="store_true", help="keep the random weights (the memory test)")
    ap.add_argument("--only", action="append", choices=sorted(MODELS))
    ap.add_argument("--whisper-generation", type=int, metavar="STEPS",
                    help="count Whisper-Tiny's launches in a KV-cache generation loop of STEPS tokens, and stop")
    args = ap.parse_args(argv)
    if args.whisper_generation:
        counts = whisper_generation_launches(args.whisper_generation)
        print(f"Whisper-Tiny, {args.whisper_generation} decoding steps with the KV cache: {sum(counts)} launches "
              f"= encoder {counts[0]} + steps {' + '.join(map(str, counts[1:]))}")
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    todo = [(name, True) for name in args.only or MODELS] + [(name, False) for name in TORCHSCRIPT
                                                              if name in (args.only or MODELS)]
    for name, dynamo in todo:
        path = export(name, args.out, args.full, args.keep_weights, dynamo)
        print(f"{path}: {os.path.getsize(path):,} bytes", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
