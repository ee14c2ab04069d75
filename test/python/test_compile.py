"""ios.compile (python/ios/_compile.py): a PyTorch module exported to ONNX
(TorchScript exporter, opset 17), scheduled by ios.optimize and run by an
ios.Engine, in one call. torchvision CNNs with random weights against
PyTorch by the CPU accuracy rule; inputs and outputs as the module takes
and gives them; options passed through to ios.optimize and ios.Engine;
the refusals. The CUDA backend's case is marked `cuda` (ctest's "python:
module on CUDA"), skipped without a GPU.

Run by ctest ("python: module") with PYTHONPATH=build/python, or by hand:
    PYTHONPATH=build/python /usr/bin/python3 -m pytest test/python/test_compile.py
"""

import copy
import inspect
import os

import numpy as np
import pytest
import torch
import torchvision

import ios


def _errors(actual, truth):
    """(rms, max absolute) error of `actual` against the float64 truth."""
    diff = np.asarray(actual, np.float64) - np.asarray(truth, np.float64)
    return float(np.sqrt(np.mean(diff * diff))), float(np.max(np.abs(diff)))


def _accuracy_rule(ours, peer, truth):
    """The CPU accuracy rule of the model-family tests
    (test/cpu/model_families_test.cpp) and the examples
    (examples/torchvision_export.py): against a float64 truth, ios's float32
    output has at most twice the error of an independent float32 run (the
    peer, here PyTorch itself), rms and max absolute error both."""
    (rms, worst), (peer_rms, peer_worst) = _errors(ours, truth), _errors(peer, truth)
    return rms <= 2 * peer_rms and worst <= 2 * peer_worst, (rms, worst, peer_rms, peer_worst)


def _torchvision(name, seed=0):
    torch.manual_seed(seed)
    return getattr(torchvision.models, name)(weights=None).eval()


@pytest.mark.parametrize("name", ["squeezenet1_1", "resnet18"])
def test_a_torchvision_cnn_matches_pytorch(name):
    """The one-liner on a torchvision CNN (random weights, 64x64): the output
    a torch tensor of the module's shape, within the accuracy rule of
    PyTorch's float32 run against the module in float64, and another input
    giving another output."""
    module = _torchvision(name)
    x = torch.randn(1, 3, 64, 64, generator=torch.Generator().manual_seed(1))
    run = ios.compile(module, x, cost="simulated")
    y = run(x)
    with torch.no_grad():
        peer = module(x)
        truth = copy.deepcopy(module).double()(x.double())
    assert isinstance(y, torch.Tensor) and y.dtype == torch.float32 and y.shape == peer.shape
    passed, numbers = _accuracy_rule(y.numpy(), peer.numpy(), truth.numpy())
    assert passed, f"ios rms {numbers[0]:.3g} max {numbers[1]:.3g}, PyTorch rms {numbers[2]:.3g} max {numbers[3]:.3g}"
    # Not a constant: SqueezeNet's random-weight scores of two noise images
    # differ by far more than the rule's errors (1e-7 of them).
    x2 = torch.randn(1, 3, 64, 64, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        peer2 = module(x2)
    y2 = run(x2)
    assert np.abs(y2.numpy() - y.numpy()).max() > 100 * numbers[3]
    np.testing.assert_allclose(y2.numpy(), peer2.numpy(), rtol=1e-4, atol=1e-5)
    assert run.exporter == "torchscript" and run.opset == 17
    assert run.schedule.scheduler == "ios" and run.engine.backend == "cpu"


class _TwoInTwoOut(torch.nn.Module):
    """Two inputs (named image and gain), two outputs (a feature map and its
    pooled channel means), with batch normalization and dropout, whose eval
    mode differs from their training mode."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.drop = torch.nn.Dropout(0.5)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-0.5, 0.5)
            self.bn.running_var.uniform_(0.5, 2.0)

    def forward(self, image, gain):
        features = torch.relu(self.bn(self.conv(image))) * gain
        return features, self.drop(features).mean(dim=(2, 3))


def test_inputs_and_outputs_as_the_module_has_them():
    torch.manual_seed(3)
    module = _TwoInTwoOut().train()
    image, gain = torch.randn(2, 3, 16, 16), torch.rand(1, 8, 1, 1)
    run = ios.compile(module, (image, gain), cost="simulated", scheduler="sequential")
    assert module.training  # the caller's mode restored
    assert run.input_names == ["image", "gain"] and run.output_names == ["output_0", "output_1"]
    module.eval()
    with torch.no_grad():
        expected = module(image, gain)
    for out in [run(image, gain), run(image=image, gain=gain)]:
        assert isinstance(out, tuple) and len(out) == 2
        for got, want in zip(out, expected):
            assert isinstance(got, torch.Tensor) and got.shape == want.shape
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    # As the module takes them: a tensor in autograd's graph, a strided view.
    tracked = image.clone().requires_grad_()
    strided = image.transpose(2, 3).contiguous().transpose(2, 3)
    for value in [tracked, strided]:
        got = run(value, gain)
        assert not got[0].requires_grad
        np.testing.assert_allclose(got[0].numpy(), expected[0].numpy(), rtol=1e-5, atol=1e-6)
    # numpy in, numpy out: the engine's rule.
    assert isinstance(run(image.numpy(), gain.numpy())[1], np.ndarray)
    with pytest.raises(TypeError, match=r"the module takes 2 input\(s\) \(image, gain\); got 1"):
        run(image)
    with pytest.raises(ios.UserError, match=r"^input 'image' has shape 1x3x16x16 but the model needs 2x3x16x16$"):
        run(image[:1], gain)


def test_options_reach_optimize_and_the_engine(tmp_path):
    """Keywords go to ios.optimize; engine_options to ios.Engine; onnx_path
    keeps the export (otherwise a temporary file, gone once loaded)."""
    module = _torchvision("squeezenet1_1")
    x = torch.randn(1, 3, 32, 32)
    path = tmp_path / "kept" / "squeezenet.onnx"
    os.makedirs(path.parent)
    run = ios.compile(module, x, cost="simulated", scheduler="dos", max_streams=1, onnx_path=path,
                      engine_options={"threads": 1})
    assert run.schedule.scheduler == "dos"
    assert all(len(stage["groups"]) == 1 for stage in run.schedule.stages)
    assert run.onnx_path == str(path) and path.exists()
    np.testing.assert_allclose(ios.Engine(path, run.schedule)(x).numpy(), run(x).numpy(), rtol=0, atol=0)
    temporary = ios.compile(module, x, cost="simulated")
    assert temporary.onnx_path is None
    np.testing.assert_array_equal(temporary(x).numpy(), ios.Engine(path, temporary.schedule)(x).numpy())
    with pytest.raises(ios.UserError, match=r"max_block_units 0: expected a value from 1 to 64"):
        ios.compile(module, x, max_block_units=0)
    with pytest.raises(ios.UserError, match=r"unknown backend 'tpu'"):
        ios.compile(module, x, cost="simulated", backend="tpu")
    with pytest.raises(TypeError):
        ios.compile(module, x, no_such_option=1)


def test_refusals():
    module = _torchvision("squeezenet1_1")
    x = torch.randn(1, 3, 32, 32)
    with pytest.raises(ios.UserError, match=r"^ios.compile: module is a function; give a torch.nn.Module$"):
        ios.compile(lambda t: t, x)
    with pytest.raises(ios.UserError, match=r"^ios.compile: example_inputs\[1\] is a list; give a torch tensor or a "
                                            r"tuple of them$"):
        ios.compile(module, (x, [1.0]))
    with pytest.raises(ios.UserError, match=r"^ios.compile: unknown exporter 'onnxscript'; give 'torchscript' or "
                                            r"'dynamo'$"):
        ios.compile(module, x, exporter="onnxscript")

    class Dict(torch.nn.Module):
        def forward(self, t):
            return {"y": t + 1}

    with pytest.raises(ios.UserError, match=r"^ios.compile: the module returned dict; ios runs modules whose "
                                            r"forward returns a tensor or a tuple or list of tensors$"):
        ios.compile(Dict(), x)

    class Fft(torch.nn.Module):
        def forward(self, t):
            return torch.fft.fft(t).real

    with pytest.raises(ios.UserError, match=r"^ios.compile: torch.onnx.export \(torchscript exporter, opset 17\) "
                                            r"failed: .*"):
        ios.compile(Fft(), x)


@pytest.mark.skipif("dynamo" in inspect.signature(torch.onnx.export).parameters,
                    reason="this PyTorch has the dynamo exporter")
def test_dynamo_needs_a_pytorch_that_has_it():
    with pytest.raises(ios.UserError, match=r"^ios.compile: exporter='dynamo' needs a PyTorch whose "
                                            r"torch.onnx.export takes dynamo= \(2.5 and later\); this one is "
                                            r".*: use exporter='torchscript'$"):
        ios.compile(_torchvision("squeezenet1_1"), torch.randn(1, 3, 32, 32), exporter="dynamo")


def test_nothing_on_standard_output(capfd):
    """As every ios call: the export's own messages, if any, not on stdout."""
    ios.compile(_torchvision("squeezenet1_1"), torch.randn(1, 3, 32, 32), cost="simulated")
    assert capfd.readouterr().out == ""


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA: torch sees no GPU")
def test_compile_on_cuda():
    """backend="cuda" in strict FP32: torch CUDA tensors in and out, on the
    GPU of the module, against the same compile on the CPU backend."""
    module = _torchvision("squeezenet1_1")
    x = torch.randn(1, 3, 64, 64, generator=torch.Generator().manual_seed(1))
    on_cpu = ios.compile(module, x, cost="simulated")(x)
    run = ios.compile(module.cuda(), x.cuda(), backend="cuda", cost="simulated", precision="fp32")
    y = run(x.cuda())
    assert isinstance(y, torch.Tensor) and y.is_cuda and y.dtype == torch.float32
    np.testing.assert_allclose(y.cpu().numpy(), on_cpu.numpy(), rtol=1e-4, atol=1e-4)
