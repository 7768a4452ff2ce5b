//! How long to wait before retry `n` (Java `RetryWaiter`): `min * 2^n`, capped at `max`, plus
//! up to 20% jitter drawn from the table's [`Env`], so that writers that lost one race do not
//! meet again at the next.

use std::time::Duration;

use tidelake_spec::options::Options;

use crate::io::Env;

/// `commit.min-retry-wait` and `commit.max-retry-wait`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RetryWait {
    pub(crate) min: Duration,
    pub(crate) max: Duration,
}

impl RetryWait {
    /// The waits a table's options set.
    pub(crate) fn of(options: &Options) -> tidelake_spec::Result<RetryWait> {
        Ok(RetryWait {
            min: options.commit_min_retry_wait()?,
            max: options.commit_max_retry_wait()?,
        })
    }

    /// The wait before retry `retry` (0 = the first retry).
    pub(crate) fn before(&self, retry: u32, env: &Env) -> Duration {
        let millis = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        let factor = 1u64.checked_shl(retry).unwrap_or(u64::MAX);
        let base = millis(self.min)
            .saturating_mul(factor)
            .min(millis(self.max));
        let jitter = env.uuid().as_u64_pair().0 % (base / 5).max(1);
        Duration::from_millis(base.saturating_add(jitter))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_grow_to_the_cap_with_at_most_a_fifth_of_jitter() {
        let wait = RetryWait {
            min: Duration::from_millis(10),
            max: Duration::from_millis(1000),
        };
        let env = Env::default();
        for (retry, base) in [(0, 10), (1, 20), (3, 80), (7, 1000), (40, 1000), (70, 1000)] {
            let w = wait.before(retry, &env).as_millis();
            assert!(w >= base && w <= base + base / 5, "retry {retry}: {w} ms");
        }
    }
}
