"""Win rates, confidence intervals and significance of the judge's verdicts.

Per (question, pair, criterion), only counterbalanced trials count: as many with A shown first as
with B shown first (the surplus of one order, left by failed trials, is dropped and counted). A trial
scores 1 when A wins, 1/2 on a tie, 0 when B wins; a question's score is the mean of its trials.

- win rate of A = mean question score; 95 % Wilson interval with n = questions and the summed scores
  as successes (questions, not trials, are the independent units);
- significance: exact two-sided sign test on the questions A wins (score > 1/2) against those B wins
  (score < 1/2), tied questions left out;
- Holm's correction across every (pair, criterion) of the comparison; A/A pairs are checks, not
  hypotheses, and stay out of the family;
- A/A check: a method against itself should win ~50 % (the interval holding 1/2); position bias is
  the share of decisive verdicts that picked the answer shown first (~50 % for an unbiased judge).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from statistics import mean

from pydantic import BaseModel, ConfigDict

from driftrag.eval.judge import CRITERIA, Criterion, Judgment
from driftrag.eval.records import now
from driftrag.eval.stats import holm, sign_test, wilson_interval

ALPHA = 0.05
_SCORE = {"a": 1.0, "tie": 0.5, "b": 0.0}


class CriterionResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    criterion: str
    questions: int
    trials: int
    wins_a: int
    wins_b: int
    ties: int
    win_rate_a: float | None
    ci_low: float | None
    ci_high: float | None
    questions_won_a: int
    questions_won_b: int
    questions_tied: int
    p_value: float
    p_holm: float | None = None
    significant: bool | None = None


class PairResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    method_a: str
    method_b: str
    aa: bool
    criteria: list[CriterionResult]
    failed_trials: int
    unbalanced_trials_dropped: int
    first_position_share: float | None
    aa_consistent: bool | None = None


class JudgeSummary(BaseModel):
    model_config = ConfigDict(extra="forbid")

    trials_per_pair: int
    alpha: float
    pairs: list[PairResult]
    aa_checks: list[PairResult]
    first_position_share: float | None
    judgments: int
    failed: int
    prompt_tokens: int
    completion_tokens: int
    written_at: str


def balanced(judgments: Sequence[Judgment]) -> tuple[list[Judgment], int]:
    """The valid trials of one (question, pair), cut to equal numbers of each order (lowest trials kept)."""
    ab = sorted((j for j in judgments if j.error is None and j.order == "ab"), key=lambda j: j.trial)
    ba = sorted((j for j in judgments if j.error is None and j.order == "ba"), key=lambda j: j.trial)
    keep = min(len(ab), len(ba))
    return ab[:keep] + ba[:keep], len(ab) + len(ba) - 2 * keep


def first_position_share(judgments: Sequence[Judgment]) -> float | None:
    """Share of decisive verdicts (all criteria) that picked the answer shown first."""
    decisive = [slot for j in judgments if j.error is None for slot in j.slots.values() if slot != "tie"]
    return sum(slot == "1" for slot in decisive) / len(decisive) if decisive else None


def criterion_result(criterion: Criterion, by_question: dict[str, list[Judgment]]) -> CriterionResult:
    scores: list[float] = []
    winners = [j.winners[criterion] for trials in by_question.values() for j in trials]
    for trials in by_question.values():
        if trials:
            scores.append(mean(_SCORE[j.winners[criterion]] for j in trials))
    won_a = sum(score > 0.5 for score in scores)
    won_b = sum(score < 0.5 for score in scores)
    low, high = wilson_interval(sum(scores), len(scores)) if scores else (None, None)
    return CriterionResult(
        criterion=criterion,
        questions=len(scores),
        trials=len(winners),
        wins_a=winners.count("a"),
        wins_b=winners.count("b"),
        ties=winners.count("tie"),
        win_rate_a=mean(scores) if scores else None,
        ci_low=low,
        ci_high=high,
        questions_won_a=won_a,
        questions_won_b=won_b,
        questions_tied=len(scores) - won_a - won_b,
        p_value=sign_test(won_a, won_a + won_b),
    )


def _holds_half(result: CriterionResult) -> bool:
    return result.ci_low is not None and result.ci_high is not None and result.ci_low <= 0.5 <= result.ci_high


def pair_result(method_a: str, method_b: str, judgments: Sequence[Judgment]) -> PairResult:
    by_question: dict[str, list[Judgment]] = defaultdict(list)
    for judgment in judgments:
        by_question[judgment.question_id].append(judgment)
    dropped = 0
    kept: dict[str, list[Judgment]] = {}
    for question_id, trials in by_question.items():
        kept[question_id], surplus = balanced(trials)
        dropped += surplus
    aa = method_a == method_b
    criteria = [criterion_result(criterion, kept) for criterion in CRITERIA]
    return PairResult(
        method_a=method_a,
        method_b=method_b,
        aa=aa,
        criteria=criteria,
        failed_trials=sum(1 for j in judgments if j.error is not None),
        unbalanced_trials_dropped=dropped,
        first_position_share=first_position_share(judgments),
        aa_consistent=(all(_holds_half(c) for c in criteria) if aa else None),
    )


def summarize_judgments(judgments: Sequence[Judgment], trials_per_pair: int, alpha: float = ALPHA) -> JudgeSummary:
    groups: dict[tuple[str, str], list[Judgment]] = defaultdict(list)
    for judgment in judgments:
        groups[(judgment.method_a, judgment.method_b)].append(judgment)
    results = [pair_result(a, b, group) for (a, b), group in groups.items()]
    pairs = [r for r in results if not r.aa]
    family = [c for pair in pairs for c in pair.criteria]
    for criterion, adjusted in zip(family, holm([c.p_value for c in family]), strict=True):
        criterion.p_holm = adjusted
        criterion.significant = adjusted < alpha
    return JudgeSummary(
        trials_per_pair=trials_per_pair,
        alpha=alpha,
        pairs=pairs,
        aa_checks=[r for r in results if r.aa],
        first_position_share=first_position_share(judgments),
        judgments=len(judgments),
        failed=sum(1 for j in judgments if j.error is not None),
        prompt_tokens=sum(j.prompt_tokens for j in judgments),
        completion_tokens=sum(j.completion_tokens for j in judgments),
        written_at=now(),
    )
