"""The paper-scale paths with tiny stand-ins: a fake DexGraspNet folder (Sec. 6), the preflight
message, and the MuJoCo Adroit backend (Sec. 5.1-5.2) running two PPO iterations of a base
policy and of the hyper-policy on real physics (skipped without gymnasium-robotics/mujoco)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import yaml

from papers.resdex.data import load_dexgraspnet, representative_objects
from papers.resdex.train import preflight
from shared.config import compose


def _fake_dexgraspnet(root, rng) -> dict[str, list[float]]:
    splits = {
        "train_set.yaml": {f"core/mug-{i}": [0.06, 0.08] for i in range(6)},
        "test_set_seen_cat.yaml": {"core/mug-9": [0.1]},
        "test_set_unseen_cat.yaml": {"sem/Car-1": [0.12]},
    }
    for name in ("datasetv4.1", "meshdatav3_scaled", "meshdatav3_pc_feat"):
        (root / name).mkdir()
    for file, entries in splits.items():
        (root / file).write_text(yaml.safe_dump(entries))
        for code, scales in entries.items():
            folder = root / "meshdatav3_pc_feat" / code
            folder.mkdir(parents=True, exist_ok=True)
            for scale in scales:
                np.save(folder / f"pc_feat_{round(scale * 100):03d}.npy", rng.normal(size=64))
    return splits["train_set.yaml"]


def test_dexgraspnet_layout_and_representatives(tmp_path):
    train = _fake_dexgraspnet(tmp_path, np.random.default_rng(0))
    objects = load_dexgraspnet(tmp_path, "train")
    assert len(objects) == sum(len(s) for s in train.values())
    assert objects[0].feature.shape == (64,)
    assert objects[1].scale == 0.08 and objects[1].code == "core/mug-0"
    reps = representative_objects(np.stack([o.feature for o in objects]), 4, seed=0)
    assert len(set(reps.tolist())) == 4
    assert len(load_dexgraspnet(tmp_path, "test_unseen_cat")) == 1
    with pytest.raises(ValueError, match="split"):
        load_dexgraspnet(tmp_path, "val")
    (tmp_path / "meshdatav3_pc_feat" / "core" / "mug-0" / "pc_feat_006.npy").unlink()
    with pytest.raises(FileNotFoundError, match="pc_feat_006"):
        load_dexgraspnet(tmp_path, "train")


def test_missing_data_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="meshdatav3_pc_feat"):
        load_dexgraspnet(tmp_path)
    cfg = compose("resdex", "paper", [f"data.root={tmp_path}"])
    problems = preflight(cfg)
    assert any("isaacgym" in p for p in problems)
    assert any("train split missing" in p for p in problems)


def test_mujoco_backend_runs_base_and_hyper_policy(tmp_path):
    pytest.importorskip("mujoco")
    pytest.importorskip("gymnasium_robotics")
    from papers.resdex import mujoco_env
    from papers.resdex.model import ActorCritic, HyperPolicy
    from papers.resdex.train import run

    torch.set_num_threads(1)
    variants = mujoco_env.object_variants(1, seed=0)
    env = mujoco_env.AdroitRelocateBackend(variants, 4, episode_steps=5)
    types = [e.unwrapped.model.geom("sphere").type.item() for e in env.envs]
    assert len(set(types)) == 4  # sphere, box, cylinder, capsule built through MjSpec
    obs, _ = env.reset(seed=0)
    assert obs.shape == (4, 39 + mujoco_env.DESCRIPTOR_DIM)

    base = ActorCritic(39, 30, [8], 0.5, 5.0)
    torch.nn.init.normal_(base.actor[-1].weight, std=3.0)  # means beyond [-1, 1]
    hyper = HyperPolicy([base], env.obs_dim, 30, [8], 0.5, 5.0)
    u = torch.zeros(4, 31)
    u[:, 1:] = 0.5  # residual
    action = hyper.to_action(obs, u)
    torch.testing.assert_close(action, base.mean(obs) + 0.5)  # K = 1: weight 1
    _, reward, _, _, info = env.step(action)
    assert env.last_actions.abs().max() <= 1.0 and torch.equal(
        env.last_actions, action.clamp(-1, 1)
    )
    assert reward.shape == (4,) and torch.isfinite(reward).all()
    with pytest.raises(ValueError, match="shape"):
        env.step(torch.zeros(4, 24))

    overrides = [
        "env.backend=mujoco",
        "env.episode_steps=4",
        "env.mujoco_objects_per_type=1",
        "seeds=[0]",
        *(
            f"{group}.{key}"
            for group in ("base.ppo", "hyper")
            for key in ("num_envs=2", "iterations=2", "nsteps=4", "minibatches=2", "hidden=[8]")
        ),
    ]
    results = run(compose("resdex", "paper", overrides), tmp_path)
    assert set(results) == {"base", "resdex"}
    assert all(np.isfinite(v["episode_return"]).all() for v in results.values())
    state = torch.load(tmp_path / "runs" / "resdex-s0" / "checkpoint.pt", weights_only=True)
    assert state["step"] == 2 and state["model"]["policy.log_std"].shape == (31,)


def test_relocate_success_reads_the_configured_distance():
    """``env.mujoco_success_distance`` decides MuJoCo success; DAPG's reward bonuses stay."""
    from papers.resdex.mujoco_env import relocate_reward

    palm, target = np.zeros(3), np.zeros(3)
    obj = np.array([0.15, 0.0, 0.0])  # 0.15 from the target, on the table
    reward, success = relocate_reward(palm, obj, target)
    assert not success and reward == pytest.approx(-0.1 * 0.15)
    wider_reward, wider_success = relocate_reward(palm, obj, target, success_distance=0.2)
    assert wider_success and wider_reward == reward
    assert compose("resdex", "smoke").env.mujoco_success_distance == 0.1
