r"""
# Adam, AMSGrad and AdamX as used by AdamCB

Adam Optimization with Adaptive Batch Selection (Kim & Oh, ICLR 2025, arXiv 2512.06795).

AdamCB changes *which* examples enter $\hat g_t$; the step itself is an Adam-type update. The
official code has three, all with a decaying step $\alpha_t = \alpha/\sqrt t$ and a decaying
first-moment factor $\beta_{1,t} = \beta_1 \lambda^{t-1}$ (Sec. 3.1 step 4 and Sec. 3.2 of the
brief `adamcb.md`):

$$m_t = \beta_{1,t} m_{t-1} + (1-\beta_{1,t}) \hat g_t, \qquad
  v_t = \beta_2 v_{t-1} + (1-\beta_2) \hat g_t^2$$

* **adam** uses $v_t$ as it is (no max);
* **amsgrad** uses $\hat v_t = \max(\hat v_{t-1}, v_t)$ with $\hat v_0 = 0$;
* **adamx** (AdamCB's update, `adam_corrected_update` in the official code) uses
  $\hat v_1 = v_1$ and $\hat v_t = \max\big((1-\beta_{1,t})^2/(1-\beta_{1,t-1})^2 \,
  \hat v_{t-1}, v_t\big)$.

Then, with bias corrections that raise the *current* $\beta_{1,t}$ to the power $t$,

$$\theta_{t+1} = \theta_t - \alpha_t \frac{m_t / (1-\beta_{1,t}^t)}
  {\sqrt{\hat v_t / (1-\beta_2^t)} + \epsilon}.$$

With $\lambda = 1$ the adamx ratio is exactly 1, so adamx and amsgrad coincide.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import torch

VARIANTS = ("adam", "amsgrad", "adamx")


class AdamFamily(torch.optim.Optimizer):
    r"""Adam / AMSGrad / AdamX with $\alpha/\sqrt t$ and $\beta_{1,t} = \beta_1\lambda^{t-1}$.

    Sec. 3.1 step 4 (adamx, AdamCB's optimizer) and Sec. 3.2 (adam, amsgrad baselines), as the
    official code computes them. Per-parameter state (like `torch.optim.Adam`): `step` (the
    $t$ of the last update, a Python int, so `state_dict` / `load_state_dict` resume exactly),
    `exp_avg` ($m$), `exp_avg_sq` ($v$) and, except for adam, `max_exp_avg_sq` ($\hat v$).

    Args:
        params: parameters or parameter groups.
        lr: base step size $\alpha$; step t uses $\alpha/\sqrt t$ (official 1e-3, Sec. 3.1 step 4).
        betas: $(\beta_1, \beta_2)$ (official (0.9, 0.999)).
        eps: $\epsilon$ added to the denominator (official 1e-8).
        lam: $\lambda$ in $\beta_{1,t} = \beta_1 \lambda^{t-1}$ (official 1 - 1e-8).
        variant: "adam", "amsgrad" or "adamx" (AdamCB and the AdamX / AdamBS baselines).

    Raises:
        ValueError: on an unknown variant or out-of-range hyper-parameters.
    """

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        lam: float = 1 - 1e-8,
        variant: str = "adamx",
    ) -> None:
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
        if lr < 0.0:
            raise ValueError(f"lr must be >= 0, got {lr}")
        if not (0.0 <= betas[0] < 1.0 and 0.0 <= betas[1] < 1.0):
            raise ValueError(f"betas must lie in [0, 1), got {betas}")
        if eps < 0.0:
            raise ValueError(f"eps must be >= 0, got {eps}")
        if not 0.0 < lam <= 1.0:
            raise ValueError(f"lam must lie in (0, 1], got {lam}")
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "lam": lam, "variant": variant}
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure: Callable[[], torch.Tensor] | None = None) -> torch.Tensor | None:
        """One update of every parameter with a gradient (Sec. 3.1 step 4).

        Args:
            closure: optional callable that re-evaluates the loss (torch convention).

        Returns:
            The closure's loss, or None.
        """
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()

        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lam, eps, variant = group["lam"], group["eps"], group["variant"]
            for param in group["params"]:
                if param.grad is None:
                    continue
                g = param.grad  # same shape as param
                if g.is_sparse:
                    raise RuntimeError("AdamFamily does not support sparse gradients")

                state = self.state[param]
                if len(state) == 0:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(param, memory_format=torch.preserve_format)
                    state["exp_avg_sq"] = torch.zeros_like(
                        param, memory_format=torch.preserve_format
                    )
                    if variant != "adam":
                        state["max_exp_avg_sq"] = torch.zeros_like(
                            param, memory_format=torch.preserve_format
                        )
                state["step"] += 1
                t = state["step"]

                beta1_t = beta1 * lam ** (t - 1)  # beta_{1,t}
                step_size = group["lr"] / math.sqrt(t)  # alpha_t

                m, v = state["exp_avg"], state["exp_avg_sq"]
                m.mul_(beta1_t).add_(g, alpha=1.0 - beta1_t)
                v.mul_(beta2).addcmul_(g, g, value=1.0 - beta2)

                if variant == "adam":
                    v_hat = v
                elif variant == "amsgrad":
                    v_hat = state["max_exp_avg_sq"]
                    torch.maximum(v_hat, v, out=v_hat)
                else:  # adamx
                    v_hat = state["max_exp_avg_sq"]
                    if t == 1:
                        v_hat.copy_(v)
                    else:
                        beta1_prev = beta1 * lam ** (t - 2)  # beta_{1,t-1}
                        ratio = (1.0 - beta1_t) ** 2 / (1.0 - beta1_prev) ** 2
                        torch.maximum(v_hat.mul_(ratio), v, out=v_hat)

                m_corr = m / (1.0 - beta1_t**t)
                denom = (v_hat / (1.0 - beta2**t)).sqrt_().add_(eps)
                param.addcdiv_(m_corr, denom, value=-step_size)
        return loss
