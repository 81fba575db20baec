r"""
# qNBO: quasi-Newton Meets Bilevel Optimization

Fang, Liu, Yao, Yu & Zhang, ICLR 2025, [arXiv 2502.01076](https://arxiv.org/abs/2502.01076).

Bilevel problem $\min_x \Phi(x) = F(x, y^*(x))$, $y^*(x) = \arg\min_y f(x, y)$ with $f$ strongly
convex in $y$. The hypergradient

$$\nabla\Phi(x) = \nabla_x F - \nabla^2_{xy} f\,[\nabla^2_{yy} f]^{-1}\nabla_y F$$

needs (C1) an approximate $y^*$ and (C2) an inverse-Hessian-vector product $u^*$. qNBO solves the
lower level with quasi-Newton steps (Subroutine A) and reuses the *same* curvature pairs to
approximate $u^*$, corrected by a few more quasi-Newton iterations on the linear system
(Subroutine B), since the lower-level matrix is only accurate along the directions the lower
level explored. Baselines AID-BIO (Richardson/Neumann) and AmIGO-CG differ only in (C1, C2).

This module holds the method (no Hydra, no I/O). "Sec." refers to the implementation brief
`qnbo.md`; Subroutine B is the brief's reconstruction (derivation), see the README.
Everything runs in float64: finite-difference curvature pairs lose their digits in float32.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.autograd.forward_ad as fwAD

from papers.qnbo.config import CURVATURES, KINDS

Tensor = torch.Tensor
ScalarFn = Callable[[Tensor, Tensor], Tensor]  # (x, y) -> scalar

# Default step sizes, for the problems of the brief (Sec. 3.5, 5). A gradient step of size eta on
# a quadratic with largest curvature lambda_max contracts only when eta < 2 / lambda_max.
# Lower level: toy 1's A has eigenvalues in [1, 100] (kappa = 100), so lambda_max = 100 and the
# bound is 0.02; the default is the brief's beta = 1/L_f = 0.01 there (half the bound). The
# hyper-cleaning lower level is flatter (L <= 5.78, bound >= 0.34), so 0.01 is safe there too.
# Upper level: toy 1's Phi has curvature L_Phi = ||A^-1 B||^2 + rho in [1.19, 1.88] over seeds
# 0-2 (bound >= 1.06); hyper-cleaning's Phi measured 6.4e-4 at x = 0 (bound ~3000). A problem
# with other curvature passes its own steps (train.py: 1/L of each toy); the tests check these
# defaults against the bounds.
DEFAULT_LOWER_STEP = 1e-2
DEFAULT_UPPER_STEP = 1e-2


# --------------------------------------------------------------------------------------------
# Oracles of a bilevel problem, with counts (Sec. 4 "matched budgets", Sec. 7 item 8)
# --------------------------------------------------------------------------------------------
@dataclass
class OracleCounts:
    grad_y_f: int = 0  # lower-level gradients
    hvp: int = 0  # Hessian-vector products (autograd)
    grad_F: int = 0  # upper-level gradients (both blocks at once)
    jvp: int = 0  # cross-derivative products d2f/dxdy . u


class Bilevel:
    """Oracles of $f$ (lower level) and $F$ (upper level) by autograd, with call counts.

    The derivatives call ``torch.autograd`` directly rather than the ``torch.func``
    transforms: the same operations, so the same bits (tests/papers/qnbo checks this), at a
    third to a half of the Python overhead, which dominates on these small problems.

    Args:
        lower: $f(x, y)$, strongly convex in $y$.
        upper: $F(x, y)$.
    """

    def __init__(self, lower: ScalarFn, upper: ScalarFn):
        self.f, self.F = lower, upper
        self.counts = OracleCounts()

    def _grad_y_f(self, x: Tensor, y: Tensor, create_graph: bool = False) -> Tensor:
        r"""$\nabla_y f(x, y)$; ``create_graph`` keeps it differentiable (in x and y)."""
        with torch.enable_grad():
            if not y.requires_grad:
                y = y.detach().requires_grad_(True)
            (g,) = torch.autograd.grad(self.f(x, y), y, create_graph=create_graph)
        return g

    def grad_y_f(self, x: Tensor, y: Tensor) -> Tensor:
        self.counts.grad_y_f += 1
        return self._grad_y_f(x.detach(), y).detach()

    def grad_F(self, x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        """$(\\nabla_x F, \\nabla_y F)$ at $(x, y)$ (a block F does not read is 0)."""
        self.counts.grad_F += 1
        with torch.enable_grad():
            x_, y_ = x.detach().requires_grad_(True), y.detach().requires_grad_(True)
            gx, gy = torch.autograd.grad(
                self.F(x_, y_), (x_, y_), allow_unused=True, materialize_grads=True
            )
        return gx.detach(), gy.detach()

    def hvp(self, x: Tensor, y: Tensor, v: Tensor) -> Tensor:
        r"""$\nabla^2_{yy} f(x, y)\, v$ by forward-over-reverse autograd: the tangent v of y
        carried through the gradient's computation (a dual tensor)."""
        self.counts.hvp += 1
        with fwAD.dual_level():
            y_dual = fwAD.make_dual(y.detach().clone().requires_grad_(True), v)
            g = self._grad_y_f(x.detach(), y_dual, create_graph=True)
            return fwAD.unpack_dual(g).tangent.detach()

    def cross_jvp(self, x: Tensor, y: Tensor, u: Tensor) -> Tensor:
        r"""$\nabla^2_{xy} f(x, y)\, u = \nabla_x \langle \nabla_y f(x, y), u\rangle$ (Sec. 3.4)."""
        self.counts.jvp += 1
        with torch.enable_grad():
            x_ = x.detach().requires_grad_(True)
            g = self._grad_y_f(x_, y.detach(), create_graph=True)
            (out,) = torch.autograd.grad(torch.dot(g, u), x_)
        return out.detach()

    def hypergradient(self, x: Tensor, y: Tensor, u: Tensor) -> Tensor:
        r"""$h = \nabla_x F(x, y) - \nabla^2_{xy} f(x, y)\, u$ (Sec. 3.2 step 3), with $\nabla_x F$
        at the new $y$."""
        gx, _ = self.grad_F(x, y)
        return gx - self.cross_jvp(x, y, u)


# --------------------------------------------------------------------------------------------
# The quasi-Newton recursion C_qN (Sec. 3.1) with curvature safeguards (Sec. 3.4)
# --------------------------------------------------------------------------------------------
@dataclass
class QNMemory:
    r"""Curvature pairs $(s_i, g_i)$ and the product $H_m v$ of their qN inverse Hessian.

    Args:
        kind: "bfgs" (two-loop recursion) or "sr1".
        curvature_eps: skip a pair unless $s^\top g > \epsilon \lVert s\rVert\lVert g\rVert$
            (BFGS) or $|p^\top g| > \epsilon \lVert p\rVert\lVert g\rVert$ (SR1).
        step_eps: skip a pair with $\lVert s\rVert \le \epsilon (1 + \lVert y\rVert)$: once the
            iterate has converged, new pairs are round-off noise (Sec. 3.4).
        fallback_step: with no pair yet, $H_0 v = $ ``fallback_step`` $\cdot v$ (a GD step of
            size beta, Sec. 3.1; also SR1's fixed $H_0$). It must stay below
            $2/\lambda_{max}$ of the Hessian; the default is :data:`DEFAULT_LOWER_STEP`.
    """

    kind: str = "bfgs"
    curvature_eps: float = 1e-8
    step_eps: float = 1e-10
    # Bug fix: the default used to be 1.0, fifty times the divergence bound 2/lambda_max = 0.02
    # of toy 1 (kappa = 100): a memory built without a step diverged on its first GD step.
    fallback_step: float = DEFAULT_LOWER_STEP
    s: list[Tensor] = field(default_factory=list)
    g: list[Tensor] = field(default_factory=list)
    p: list[Tensor] = field(default_factory=list)  # SR1: p_j = s_j - H_j g_j
    h0: float | None = None  # scalar H_0
    skipped: int = 0  # pairs refused by the safeguards

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"quasi-Newton kind must be bfgs or sr1, got {self.kind!r}")

    def copy(self) -> QNMemory:
        return QNMemory(
            self.kind,
            self.curvature_eps,
            self.step_eps,
            self.fallback_step,
            list(self.s),
            list(self.g),
            list(self.p),
            self.h0,
            self.skipped,
        )

    def __len__(self) -> int:
        return len(self.s)

    def add(self, s: Tensor, g: Tensor, iterate_norm: float = 0.0) -> bool:
        """Store the pair if it passes the safeguards; returns whether it was stored."""
        s_norm, g_norm = float(s.norm()), float(g.norm())
        finite = bool(torch.isfinite(s).all() and torch.isfinite(g).all())
        if not finite or s_norm <= self.step_eps * (1.0 + iterate_norm):
            self.skipped += 1
            return False
        if self.kind == "bfgs":
            if float(s @ g) <= self.curvature_eps * s_norm * g_norm:
                self.skipped += 1
                return False
            self.s.append(s)
            self.g.append(g)
            self.h0 = float(s @ g) / float(g @ g)  # L-BFGS scaling from the newest pair
            return True
        if self.h0 is None:  # SR1: H_0 = fallback_step * I (the GD step), fixed
            # Bug fix: H_0 used to be scaled by the first pair, h0 = s^T g / g^T g. That makes
            # p^T g = s^T g - h0 g^T g = 0 exactly, so the first pair of every memory was
            # refused (and counted as skipped) and the secant condition H g = s failed for it.
            # With fallback_step <= 1/lambda_max (beta), H_0 <= A^{-1} and SR1 stays positive
            # definite on a quadratic.
            self.h0 = self.fallback_step
        p = s - self.apply(g)  # p_j = s_j - H_j g_j
        if abs(float(p @ g)) <= self.curvature_eps * float(p.norm()) * g_norm:
            self.skipped += 1
            return False
        self.s.append(s)
        self.g.append(g)
        self.p.append(p)
        return True

    def apply(self, v: Tensor) -> Tensor:
        """$C_{qN}(v) = H_m v$ (Sec. 3.1)."""
        if self.h0 is None:
            return self.fallback_step * v
        if self.kind == "sr1":
            out = self.h0 * v
            for p, g in zip(self.p, self.g, strict=True):
                out = out + p * (float(p @ v) / float(p @ g))
            return out
        # BFGS two-loop recursion, rho_i = 1 / (g_i^T s_i)
        q = v.clone()
        alphas = []
        for s, g in zip(reversed(self.s), reversed(self.g), strict=True):
            a = float(s @ q) / float(g @ s)
            alphas.append(a)
            q = q - a * g
        r = self.h0 * q
        for (s, g), a in zip(zip(self.s, self.g, strict=True), reversed(alphas), strict=True):
            b = float(g @ r) / float(g @ s)
            r = r + s * (a - b)
        return r


# --------------------------------------------------------------------------------------------
# Subroutines A and B (Sec. 3.2, 3.3) and one outer iteration
# --------------------------------------------------------------------------------------------
@dataclass
class QNBOSettings:
    """qNBO's knobs (Sec. 3.5). ``Q`` = 0 is the ablation without Subroutine B."""

    P: int = 3  # warm-up GD steps in Subroutine A
    T: int = 10  # qN steps in Subroutine A
    Q: int = 10  # Subroutine-B qN iterations
    beta: float = DEFAULT_LOWER_STEP  # lower-level GD step (< 2 / lambda_max of grad^2_yy f)
    gamma: float = 1.0  # qN step (unit)
    alpha: float = DEFAULT_UPPER_STEP  # upper-level step (< 2 / lambda_max of grad^2 Phi)
    kind: str = "bfgs"  # bfgs | sr1
    curvature: str = "finite_difference"  # finite_difference | autograd (Subroutine B's Hv)
    fd_scale: float = 1e-3  # finite-difference step: eps = fd_scale / ||u||
    grad_tol: float = 1e-10  # early exit of A when ||grad_y f|| falls below
    residual_tol: float = 1e-10  # early exit of B when ||r|| <= tol ||b||
    curvature_eps: float = 1e-8
    step_eps: float = 1e-10


def subroutine_a(
    problem: Bilevel, x: Tensor, y: Tensor, s: QNBOSettings
) -> tuple[Tensor, QNMemory, Tensor]:
    r"""Lower-level update (Sec. 3.2 step 1): P GD warm-up steps, then T qN steps.

    Returns:
        ``(y_new, memory, g_star)``: the new iterate, its curvature pairs, and
        $\nabla_y f(x, y_{new})$ (reused by Subroutine B as the finite-difference reference).
        Calls $\nabla_y f$ exactly P + T + 1 times (fewer on early exit).
    """
    for _ in range(s.P):
        y = y - s.beta * problem.grad_y_f(x, y)
    memory = QNMemory(s.kind, s.curvature_eps, s.step_eps, fallback_step=s.beta)
    g = problem.grad_y_f(x, y)
    for _ in range(s.T):
        if float(g.norm()) < s.grad_tol:
            break
        d = -memory.apply(g)
        if float(d @ g) >= 0.0:  # SR1 need not be positive definite: fall back to GD
            d = -s.beta * g
        y_next = y + s.gamma * d
        g_next = problem.grad_y_f(x, y_next)
        memory.add(y_next - y, g_next - g, float(y.norm()))
        y, g = y_next, g_next
    return y, memory, g


def subroutine_b(
    problem: Bilevel,
    x: Tensor,
    y: Tensor,
    b: Tensor,
    g_star: Tensor,
    memory: QNMemory,
    u: Tensor | None,
    s: QNBOSettings,
) -> Tensor:
    r"""Hypergradient direction $u \approx [\nabla^2_{yy} f]^{-1} \nabla_y F$ (Sec. 3.3,
    reconstruction): Q BFGS iterations with unit steps on
    $\psi(u) = \tfrac12 u^\top H u - b^\top u$, starting from Subroutine A's pairs,
    warm-started from the previous $u$ (or $C_{qN}(b)$ from A's pairs when there is none).
    Calls $\nabla_y f$ (or the HVP) Q + 1 times.
    """
    memory = memory.copy()
    if u is None or s.Q == 0:
        # Q = 0 is the ablation "reuse the lower-level qN matrix" (SHINE without its
        # correction): u = C_qN(b) from A's pairs. A warm-started u with no correction step
        # would instead freeze u at its first value.
        u = memory.apply(b)

    def hessian_times(v: Tensor) -> Tensor:
        if s.curvature == "autograd":
            return problem.hvp(x, y, v)
        norm = float(v.norm())
        if norm == 0.0:  # H 0 = 0, no gradient needed
            return torch.zeros_like(v)
        eps = s.fd_scale / norm
        return (problem.grad_y_f(x, y + eps * v) - g_star) / eps

    if s.curvature not in CURVATURES:
        raise ValueError(f"curvature must be finite_difference or autograd, got {s.curvature!r}")
    r = hessian_times(u) - b
    b_norm = float(b.norm())
    for _ in range(s.Q):
        if float(r.norm()) <= s.residual_tol * b_norm:
            break
        u_next = u - memory.apply(r)
        r_next = hessian_times(u_next) - b
        memory.add(u_next - u, r_next - r, float(u.norm()))
        u, r = u_next, r_next
    return u


@dataclass
class State:
    """What an outer loop carries from one iteration to the next (all warm starts)."""

    x: Tensor
    y: Tensor
    u: Tensor | None = None
    skipped_pairs: int = 0


def qnbo_step(problem: Bilevel, state: State, s: QNBOSettings) -> State:
    """One outer iteration of Algorithm 1 (Sec. 3.2)."""
    y, memory, g_star = subroutine_a(problem, state.x, state.y, s)
    # grad_y F at the NEW y (Sec. 3.4). Bug fix: grad_x F comes from this same call; calling
    # problem.hypergradient here evaluated grad_F twice at the same point, against Sec. 7 item 8
    # ("calls grad_y F once"), and doubled the counted upper-level gradients.
    gx, b = problem.grad_F(state.x, y)
    u = subroutine_b(problem, state.x, y, b, g_star, memory, state.u, s)
    h = gx - problem.cross_jvp(state.x, y, u)
    return State(state.x - s.alpha * h, y, u, state.skipped_pairs + memory.skipped)


@dataclass
class AIDSettings:
    """AID-BIO / AmIGO-CG (Sec. 4): T lower-level GD steps, N linear-system steps."""

    T: int = 13
    N: int = 10
    beta: float = DEFAULT_LOWER_STEP  # lower-level GD step, also the Richardson step
    alpha: float = DEFAULT_UPPER_STEP
    solver: str = "richardson"  # richardson (AID-BIO) | cg (AmIGO-CG)


def aid_step(problem: Bilevel, state: State, s: AIDSettings) -> State:
    """One outer iteration of AID-BIO (Richardson) or AmIGO-CG, warm-started y and u."""
    y = state.y
    for _ in range(s.T):
        y = y - s.beta * problem.grad_y_f(state.x, y)
    gx, b = problem.grad_F(state.x, y)  # one upper-level gradient, as in qnbo_step
    u = torch.zeros_like(b) if state.u is None else state.u
    if s.solver == "richardson":  # u <- u - beta (H u - b)
        for _ in range(s.N):
            u = u - s.beta * (problem.hvp(state.x, y, u) - b)
    elif s.solver == "cg":  # conjugate gradients on H u = b
        r = b - problem.hvp(state.x, y, u)
        d = r.clone()
        rr = float(r @ r)
        for _ in range(s.N):
            if rr == 0.0:
                break
            Hd = problem.hvp(state.x, y, d)
            step = rr / float(d @ Hd)
            u = u + step * d
            r = r - step * Hd
            rr_next = float(r @ r)
            d = r + (rr_next / rr) * d
            rr = rr_next
    else:
        raise ValueError(f"solver must be richardson or cg, got {s.solver!r}")
    h = gx - problem.cross_jvp(state.x, y, u)
    return State(state.x - s.alpha * h, y, u, state.skipped_pairs)
