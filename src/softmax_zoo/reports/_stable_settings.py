"""The stable page's part on what "A Fix for Softmax and Cross-Entropy" states and what we chose.

The paper text states the two problems, the softplus and expm1 formulas (with the zero-sum
correction) and two FP32 minimal examples; it names no training task, model, optimiser, length or
dtype beyond FP32. Every training setting is ours; the numbers here come from the records'
``setting``.
"""

from __future__ import annotations

from typing import Any


def settings_section(setting: dict[str, Any], seeds: list[int], memorise_float32_peak: float | None) -> str:
    """Markdown: the paper's statements, then each of our choices with its reason.

    Args:
        setting: a record's Setting (the study's numbers).
        seeds: the records' seeds.
        memorise_float32_peak: the largest share of exactly-0 target gradients that standard float32 CE reaches in
            the memorise regime (None without those runs); it is why the saturate regime exists.
    """
    s = setting
    if memorise_float32_peak is None:
        why_saturate = "it drives float32 to collapse"
    elif memorise_float32_peak < 0.5:
        why_saturate = (f"in float32 the memorise regime does not reach collapse (at most {100 * memorise_float32_peak:.0f}% "
                        "of target gradients exactly 0)")
    else:
        why_saturate = (f"a second route to float32 collapse (the memorise regime reaches {100 * memorise_float32_peak:.0f}% "
                        "of target gradients exactly 0 too)")
    stated = [
        "softmax collapse: the CE target gradient q_t − 1 rounds to exactly 0 once q_t rounds to 1, while the non-target "
        "gradients stay positive (the zero-sum property is violated); the fix is CE = softplus(a), a = logsumexp_{j≠t}(z_j − z_t), "
        "with ∂L/∂z_t = −σ(a)",
        "softmax cancellation: the KD gradient q − p cancels when student and teacher agree; the fix builds it from logit "
        "differences, g = p·expm1(s), with the correction g_i = u_i − q_i Σ_j u_j against zero-sum violations",
        "two FP32 minimal examples (logits [18, 0]; t = [2, 1, 0] with s = t), computed on this page's ledger rows "
        "stable-example-collapse and stable-example-cancellation",
        "that precision issues \"affect training dynamics\", with no task, model, optimiser, length, dtype other than FP32, or number",
    ]
    ours = [
        f"the task, modular addition a + b mod {s.get('modulus')} with {s.get('train_fraction', 0):.0%} of the pairs for training, "
        f"and the MLP (embedding {s.get('embed')} per operand, one hidden layer of {s.get('hidden')}), full batch: a small model "
        "fits every training pair exactly in minutes on a CPU, so its margins keep growing towards saturation",
        f"the memorise regime ({s.get('collapse_steps')} steps of Adam, lr {s.get('collapse_lr')}, no weight decay): nothing "
        "holds the logits back, so they grow until softmax saturates",
        f"the saturate regime (Adam with β₂ = {s.get('saturate_beta2')}, lr {s.get('saturate_lr')}, {s.get('saturate_steps')} "
        f"steps): {why_saturate}; the short second-moment memory keeps the steps large as the gradients shrink, and q_t "
        "rounds to 1",
        f"the generalise regime (AdamW, lr {s.get('generalise_lr')}, weight decay {s.get('generalise_weight_decay')}, "
        f"{s.get('generalise_steps')} steps): to ask whether either fix changes test accuracy where the model generalises",
        f"the distillation setting (teacher: {s.get('teacher_steps')} steps of AdamW, weight decay {s.get('teacher_weight_decay')}; "
        f"student: pure KD, {s.get('distill_steps')} steps of Adam at lr {s.get('distill_lr')}, started equal to the teacher "
        "or fresh): equal logits are the paper's cancellation case, a fresh student the ordinary one",
        "bfloat16 logits (CPU autocast): the paper's examples are FP32; bfloat16's spacing near 1 is 2^-8, so rounding "
        "there is the coarsest a training run meets",
        "the arm \"standard on float32-cast logits\": the package's stable functions compute in float32 for bfloat16 logits, "
        "so this arm separates that float32 compute from the rewritten formula",
        "the float64 arm of the saturate regime: a control in which nothing rounds at these margins",
        f"{len(seeds)} seeds ({', '.join(map(str, seeds))}): the ledger's verdicts need at least 3",
    ]
    return (
        "## What the paper states and what we chose\n\n"
        "The paper text states:\n\n" + "\n".join(f"- {x}" for x in stated)
        + "\n\nOurs, not the paper's (each with its reason):\n\n" + "\n".join(f"- {x}" for x in ours) + "\n"
    )
