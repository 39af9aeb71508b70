//! A spending limit for a run or an evaluation ([`Budget`]) and the error of reaching it.

use serde::{Deserialize, Serialize};

use super::Usage;

/// A cap on what a run or an evaluation may spend: tokens (prompt plus completion), cost (from the
/// LM's [`Pricing`](crate::lm::Pricing)), or both. Set it on an agent
/// ([`Limits::budget`](crate::module::Limits::budget)) or an evaluation
/// ([`Evaluate::with_budget`](crate::evaluate::Evaluate::with_budget)).
///
/// It is checked before each LM call (or example): the work stops with [`BudgetExceeded`] when
/// what was spent, plus one more call (example) of the average size so far, would go past the
/// cap, so the cap is not crossed by more than the estimate misses. The first call always runs
/// (there is nothing to estimate from).
///
/// ```
/// use signet::lm::{Budget, Usage};
/// let budget = Budget::tokens(10_000).and_usd(0.05);
/// let spent = Usage { prompt_tokens: 8_000, completion_tokens: 400, lm_calls: 4, ..Usage::default() };
/// // 8,400 spent, 2,100 a call on average: one more would reach 10,500.
/// let error = budget.check(&spent).unwrap_err();
/// assert!(error.to_string().contains("token budget of 10000"));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budget {
    /// At most this many tokens (prompt plus completion).
    pub max_tokens: Option<u64>,
    /// At most this cost, in billionths of a US dollar.
    pub max_cost_nanousd: Option<u64>,
}

impl Budget {
    /// At most `tokens` tokens.
    pub fn tokens(tokens: u64) -> Budget {
        Budget::default().and_tokens(tokens)
    }

    /// At most `usd` US dollars (the LM needs a [`Pricing`](crate::lm::Pricing)).
    pub fn usd(usd: f64) -> Budget {
        Budget::default().and_usd(usd)
    }

    /// This budget, also capped at `tokens` tokens.
    pub fn and_tokens(mut self, tokens: u64) -> Budget {
        self.max_tokens = Some(tokens);
        self
    }

    /// This budget, also capped at `usd` dollars (negative or not a number: 0).
    pub fn and_usd(mut self, usd: f64) -> Budget {
        let nanos = if usd.is_finite() && usd > 0.0 {
            (usd * 1e9).min(u64::MAX as f64) as u64
        } else {
            0
        };
        self.max_cost_nanousd = Some(nanos);
        self
    }

    /// Whether one more call like the average so far (`spent` over its `lm_calls`) keeps within
    /// the budget; an error saying which cap it would cross otherwise.
    pub fn check(&self, spent: &Usage) -> Result<(), BudgetExceeded> {
        self.check_next(spent, spent.lm_calls)
    }

    /// [`check`](Self::check), the average taken over `units` (examples of an evaluation).
    pub(crate) fn check_next(&self, spent: &Usage, units: u64) -> Result<(), BudgetExceeded> {
        let caps = [
            (self.max_tokens, spent.total_tokens(), Spending::Tokens),
            (self.max_cost_nanousd, spent.cost_nanousd, Spending::Cost),
        ];
        for (cap, used, what) in caps {
            let Some(limit) = cap else { continue };
            let next = used.checked_div(units).unwrap_or(0);
            if used >= limit || (units > 0 && used.saturating_add(next) > limit) {
                return Err(BudgetExceeded {
                    what,
                    limit,
                    spent: used,
                    next,
                });
            }
        }
        Ok(())
    }
}

/// Which cap of a [`Budget`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Spending {
    /// Tokens (prompt plus completion).
    Tokens,
    /// Cost, in billionths of a US dollar.
    Cost,
}

/// A [`Budget`] would be exceeded by the next call: what was spent, what the next call was
/// estimated at, and the cap.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[error("{}", describe(self))]
pub struct BudgetExceeded {
    /// Which cap.
    pub what: Spending,
    /// The cap (tokens, or billionths of a dollar).
    pub limit: u64,
    /// What was spent before the call that was not made.
    pub spent: u64,
    /// What that call was estimated to spend (the average so far).
    pub next: u64,
}

fn describe(error: &BudgetExceeded) -> String {
    match error.what {
        Spending::Tokens => format!(
            "the token budget of {} would be exceeded: {} spent, about {} more for the next call",
            error.limit, error.spent, error.next
        ),
        Spending::Cost => format!(
            "the cost budget of ${:.4} would be exceeded: ${:.4} spent, about ${:.4} more for the \
             next call",
            error.limit as f64 / 1e9,
            error.spent as f64 / 1e9,
            error.next as f64 / 1e9
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spent(tokens: u64, nanos: u64, calls: u64) -> Usage {
        Usage {
            prompt_tokens: tokens,
            cost_nanousd: nanos,
            lm_calls: calls,
            ..Usage::default()
        }
    }

    #[test]
    fn the_next_call_is_refused_when_it_would_cross_a_cap() {
        let budget = Budget::tokens(1_000).and_usd(0.001);
        assert!(
            budget.check(&Usage::default()).is_ok(),
            "the first call runs"
        );
        assert!(
            budget.check(&spent(400, 0, 1)).is_ok(),
            "800 after the next"
        );
        let error = budget.check(&spent(600, 0, 1)).unwrap_err();
        assert_eq!(
            (error.what, error.spent, error.next),
            (Spending::Tokens, 600, 600)
        );
        let error = budget.check(&spent(10, 600_000, 1)).unwrap_err();
        assert_eq!(error.what, Spending::Cost);
        assert!(error.to_string().contains("$0.0010"), "{error}");
        assert!(
            Budget::default()
                .check(&spent(u64::MAX, u64::MAX, 1))
                .is_ok()
        );
        assert!(
            Budget::usd(f64::NAN).check(&spent(0, 0, 0)).is_err(),
            "a zero cap"
        );
    }
}
