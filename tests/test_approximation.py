"""Approximation: optimiser steps, clipping, target networks, checkpoints and shared features."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from rlconf.approximation import (
    Approximation,
    FeatureNetwork,
    FixedTarget,
    PolyakTarget,
    QNetwork,
    VNetwork,
    make_target,
    reinforce_together,
)


def regression_data(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(64, 3, generator=g)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5]]) + 0.3
    return x, y


def linear(seed: int = 0, inputs: int = 3, outputs: int = 1) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Linear(inputs, outputs)


def params(model: nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for p in model.parameters()]


def same(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


def test_reinforce_changes_parameters_and_reduces_a_regression_loss():
    x, y = regression_data()
    model = linear()
    approx = Approximation(model, torch.optim.SGD(model.parameters(), lr=0.05))
    before = params(model)
    first = F.mse_loss(approx(x), y).item()
    for _ in range(100):
        approx.reinforce(F.mse_loss(approx(x), y))
    assert not same(before, params(model))
    assert approx.updates == 100
    assert F.mse_loss(approx.no_grad(x), y).item() < 0.01 * first


def test_no_grad_and_eval_record_no_graph_and_eval_restores_the_mode():
    model = nn.Sequential(nn.Linear(3, 4), nn.Dropout(0.5), nn.Linear(4, 1))
    approx = Approximation(model, torch.optim.SGD(model.parameters(), lr=0.1))
    x = torch.randn(8, 3)
    assert not approx.no_grad(x).requires_grad
    assert approx(x).requires_grad
    assert torch.equal(approx.eval(x), approx.eval(x)), "eval must switch dropout off"
    assert model.training, "eval() puts the model back in training mode"



class _CountsTrain(nn.Linear):
    """A module whose train() does more than set its flag: it must still be called."""

    calls = 0

    def train(self, mode: bool = True):
        type(self).calls += 1
        return super().train(mode)


def test_eval_switches_every_nested_module_off_and_back_as_train_does():
    inner = nn.Sequential(nn.Linear(3, 4), nn.Dropout(0.5))
    model = nn.Sequential(inner, nn.Sequential(nn.Dropout(0.5), nn.Linear(4, 1)))
    approx = Approximation(model, torch.optim.SGD(model.parameters(), lr=0.1))
    x = torch.randn(8, 3)
    seen = []
    model.register_forward_hook(lambda *_: seen.append([m.training for m in model.modules()]))
    approx.eval(x)
    assert seen == [[False] * len(list(model.modules()))], "every module in eval mode during the pass"
    assert all(m.training for m in model.modules()), "every module back in training mode afterwards"
    model.eval()  # a model held in eval mode stays there
    assert torch.equal(approx.eval(x), approx.eval(x)) and not any(m.training for m in model.modules())

    overriding = nn.Sequential(_CountsTrain(3, 1))
    approx = Approximation(overriding, torch.optim.SGD(overriding.parameters(), lr=0.1))
    approx.eval(x)
    assert _CountsTrain.calls == 2 and overriding.training, "an overriding train() is called, both ways"

def test_clip_grad_bounds_the_gradient_norm():
    x, y = regression_data()
    y = y * 1000  # a huge loss: the raw gradient norm is far above the bound

    def grad_norm(approx: Approximation) -> float:
        approx.reinforce(F.mse_loss(approx(x), y))
        return torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in approx.model.parameters()])).item()

    raw = linear()
    clipped = linear()
    assert grad_norm(Approximation(raw, torch.optim.SGD(raw.parameters(), lr=0.0))) > 10
    assert grad_norm(Approximation(clipped, torch.optim.SGD(clipped.parameters(), lr=0.0), clip_grad=0.5)) \
        == pytest.approx(0.5, rel=1e-4)


def test_loss_scaling_scales_the_gradient():
    x, y = regression_data()
    a, b = linear(), linear()
    Approximation(a, torch.optim.SGD(a.parameters(), lr=0.0)).reinforce(F.mse_loss(a(x), y))
    Approximation(b, torch.optim.SGD(b.parameters(), lr=0.0), loss_scaling=0.25).reinforce(F.mse_loss(b(x), y))
    assert torch.allclose(b.weight.grad, 0.25 * a.weight.grad)


def test_fixed_target_changes_only_every_update_period():
    x, y = regression_data()
    model = linear()
    approx = Approximation(model, torch.optim.SGD(model.parameters(), lr=0.1), target=FixedTarget(3))
    initial = approx.target(x)
    approx.reinforce(F.mse_loss(approx(x), y))
    approx.reinforce(F.mse_loss(approx(x), y))
    assert torch.equal(approx.target(x), initial), "the target moved before its period"
    assert not torch.equal(approx.no_grad(x), initial)
    approx.reinforce(F.mse_loss(approx(x), y))
    assert torch.equal(approx.target(x), approx.no_grad(x)), "the third update refreshes the target"
    assert not approx.target(x).requires_grad


def test_fixed_target_with_period_zero_changes_only_on_sync():
    x, y = regression_data()
    model = linear()
    target = make_target("fixed", 0)
    approx = Approximation(model, torch.optim.SGD(model.parameters(), lr=0.1), target=target)
    initial = approx.target(x)
    for _ in range(5):
        approx.reinforce(F.mse_loss(approx(x), y))
    assert torch.equal(approx.target(x), initial)
    target.sync()
    assert torch.equal(approx.target(x), approx.no_grad(x))


def test_polyak_target_moves_by_the_rate():
    x, y = regression_data()
    model = linear()
    approx = Approximation(model, torch.optim.SGD(model.parameters(), lr=0.1), target=PolyakTarget(0.1))
    target_model = approx.target_network.model
    old_target = params(target_model)
    approx.reinforce(F.mse_loss(approx(x), y))
    new_model = params(model)
    for t_new, t_old, m in zip(params(target_model), old_target, new_model, strict=True):
        assert torch.allclose(t_new, 0.9 * t_old + 0.1 * m, atol=1e-6)
    assert not same(params(target_model), new_model)


def test_make_target_rejects_unknown_kinds():
    with pytest.raises(ValueError, match="polyak"):
        make_target("sometimes")


def test_state_dict_round_trip_restores_predictions_optimizer_and_target():
    x, y = regression_data()

    def build(seed):
        model = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
        torch.manual_seed(seed)
        for p in model.parameters():
            nn.init.normal_(p)
        return Approximation(model, torch.optim.Adam(model.parameters(), lr=0.01), target=FixedTarget(4))

    a = build(0)
    for _ in range(6):
        a.reinforce(F.mse_loss(a(x), y))
    saved = copy.deepcopy(a.state_dict())
    b = build(1)
    assert not torch.equal(a.no_grad(x), b.no_grad(x))
    b.load_state_dict(saved)
    assert torch.equal(a.no_grad(x), b.no_grad(x))
    assert torch.equal(a.target(x), b.target(x))
    assert b.updates == 6
    # the same next step on both: equal only if Adam's moments and the target's counter came back too
    for _ in range(2):
        a.reinforce(F.mse_loss(a(x), y))
        b.reinforce(F.mse_loss(b(x), y))
    assert torch.equal(a.no_grad(x), b.no_grad(x))
    assert torch.equal(a.target(x), b.target(x)), "the target refresh (every 4 updates) must line up"


def test_v_network_squeezes_and_q_network_keeps_one_value_per_action():
    v = VNetwork(linear(outputs=1))
    q = QNetwork(linear(outputs=4))
    x = torch.randn(5, 3)
    assert v.no_grad(x).shape == (5,)
    assert q.no_grad(x).shape == (5, 4)


def test_feature_network_accumulates_gradients_from_two_heads():
    x = torch.randn(16, 3)
    y1, y2 = torch.randn(16, 2), torch.randn(16, 1)
    trunk, head1, head2 = linear(0, 3, 4), linear(1, 4, 2), linear(2, 4, 1)
    reference = copy.deepcopy(trunk), copy.deepcopy(head1), copy.deepcopy(head2)

    features = FeatureNetwork(trunk, torch.optim.SGD(trunk.parameters(), lr=0.1))
    a1 = Approximation(head1, torch.optim.SGD(head1.parameters(), lr=0.1))
    a2 = Approximation(head2, torch.optim.SGD(head2.parameters(), lr=0.1))
    shared = features(x)
    loss1, loss2 = F.mse_loss(a1(shared), y1), F.mse_loss(a2(shared), y2)
    a1.reinforce(loss1)
    a2.reinforce(loss2)
    assert torch.equal(trunk.weight, reference[0].weight), "heads must not reach through to the trunk"
    features.reinforce()

    # the reference: one backward pass through the sum of both losses
    r_trunk, r1, r2 = reference
    r_features = r_trunk(x)
    (F.mse_loss(r1(r_features), y1) + F.mse_loss(r2(r_features), y2)).backward()
    assert torch.allclose(trunk.weight.grad, r_trunk.weight.grad, atol=1e-6)
    assert torch.allclose(trunk.bias.grad, r_trunk.bias.grad, atol=1e-6)
    with torch.no_grad():
        assert torch.allclose(trunk.weight, r_trunk.weight - 0.1 * r_trunk.weight.grad, atol=1e-6)
    assert features.updates == 1


def test_reinforce_together_matches_separate_reinforce_calls():
    x, y = regression_data()
    pairs = []
    for _ in range(2):
        p, v = linear(0), linear(1)
        pairs.append((Approximation(p, torch.optim.Adam(p.parameters(), lr=0.01)),
                      Approximation(v, torch.optim.Adam(v.parameters(), lr=0.01), loss_scaling=0.5)))
    (p1, v1), (p2, v2) = pairs
    for _ in range(3):
        p1.reinforce(F.mse_loss(p1(x), y))
        v1.reinforce(F.mse_loss(v1(x), -y))
        reinforce_together((p2, F.mse_loss(p2(x), y)), (v2, F.mse_loss(v2(x), -y)))
    assert torch.allclose(p1.no_grad(x), p2.no_grad(x), atol=1e-6)
    assert torch.allclose(v1.no_grad(x), v2.no_grad(x), atol=1e-6)
    assert p2.updates == v2.updates == 3
