//! What a model's tokens cost ([`Pricing`]), so that every [`Usage`] carries the cost of its
//! calls.

use super::Usage;

/// A model's prices, in US dollars per million tokens: prompt tokens, completion tokens, and
/// (where the provider bills them lower) prompt tokens served from its prompt cache. Give it to
/// an LM ([`OpenAiLmBuilder::pricing`](crate::lm::OpenAiLmBuilder::pricing),
/// [`ScriptedLm::with_pricing`](crate::testing::ScriptedLm::with_pricing)) and every call's
/// [`Usage::cost_nanousd`] is set, adds up through modules, evaluations and optimizers, shows on
/// the trace spans (`gen_ai.usage.cost`), and can be capped ([`Budget`](crate::lm::Budget)).
///
/// ```
/// use signet::lm::{Pricing, Usage};
/// // gpt-4o-mini's list prices: $0.15 in, $0.60 out, $0.075 cached, per million tokens.
/// let pricing = Pricing::per_million_tokens(0.15, 0.60).cached_input(0.075);
/// let usage = Usage { prompt_tokens: 10_000, cached_prompt_tokens: 4_000, completion_tokens: 500, ..Usage::default() };
/// // 6,000 at 0.15 + 4,000 at 0.075 + 500 at 0.60, per million: $0.0015
/// assert_eq!(pricing.cost_nanousd(&usage), 1_500_000);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pricing {
    input: f64,
    output: f64,
    cached_input: Option<f64>,
    cache_write: Option<f64>,
}

impl Pricing {
    /// Prices of `input_usd` per million prompt tokens and `output_usd` per million completion
    /// tokens (negative or non-finite prices count as 0).
    pub fn per_million_tokens(input_usd: f64, output_usd: f64) -> Pricing {
        Pricing {
            input: sane(input_usd),
            output: sane(output_usd),
            cached_input: None,
            cache_write: None,
        }
    }

    /// The price per million prompt tokens served from the provider's cache (default: the input
    /// price).
    pub fn cached_input(mut self, usd: f64) -> Pricing {
        self.cached_input = Some(sane(usd));
        self
    }

    /// The price per million prompt tokens written to the provider's cache (default: the input
    /// price; Anthropic bills them at 1.25 times it for the 5-minute cache).
    ///
    /// ```
    /// use signet::lm::{Pricing, Usage};
    /// // claude-haiku-4-5's list prices: $1 in, $5 out, $0.10 cache read, $1.25 cache write.
    /// let pricing = Pricing::per_million_tokens(1.0, 5.0).cached_input(0.1).cache_write(1.25);
    /// let usage = Usage { prompt_tokens: 3_000, cached_prompt_tokens: 1_000, cache_write_prompt_tokens: 1_000, ..Usage::default() };
    /// // 1,000 fresh at $1 + 1,000 read at $0.10 + 1,000 written at $1.25, per million: $0.00235
    /// assert_eq!(pricing.cost_nanousd(&usage), 2_350_000);
    /// ```
    pub fn cache_write(mut self, usd: f64) -> Pricing {
        self.cache_write = Some(sane(usd));
        self
    }

    /// What `usage`'s tokens cost, in billionths of a dollar (rounded; saturating).
    pub fn cost_nanousd(&self, usage: &Usage) -> u64 {
        let cached = usage.cached_prompt_tokens.min(usage.prompt_tokens);
        let written = usage
            .cache_write_prompt_tokens
            .min(usage.prompt_tokens - cached);
        let fresh = usage.prompt_tokens - cached - written;
        // Dollars per million tokens = thousandths of a nano-dollar per token.
        let nanos = (fresh as f64 * self.input
            + cached as f64 * self.cached_input.unwrap_or(self.input)
            + written as f64 * self.cache_write.unwrap_or(self.input)
            + usage.completion_tokens as f64 * self.output)
            * 1e3;
        if nanos >= u64::MAX as f64 {
            u64::MAX
        } else {
            nanos.round() as u64
        }
    }

    /// Sets `usage`'s cost from its tokens.
    pub fn apply(&self, usage: &mut Usage) {
        usage.cost_nanousd = self.cost_nanousd(usage);
    }
}

fn sane(price: f64) -> f64 {
    if price.is_finite() && price > 0.0 {
        price
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forged_prices_and_counts_neither_panic_nor_go_negative() {
        let usage = Usage {
            prompt_tokens: 10,
            cached_prompt_tokens: 1_000, // more than the prompt: capped
            completion_tokens: u64::MAX,
            ..Usage::default()
        };
        assert_eq!(
            Pricing::per_million_tokens(f64::NAN, -1.0).cost_nanousd(&usage),
            0
        );
        assert_eq!(
            Pricing::per_million_tokens(1.0, 1.0).cost_nanousd(&usage),
            u64::MAX
        );
        let cached_only = Pricing::per_million_tokens(1.0, 0.0).cached_input(0.5);
        assert_eq!(cached_only.cost_nanousd(&usage), 5_000);
    }
}
