//! What a run may use ([`Limits`]).

use std::time::Duration;

/// What one run may use; past any of them it ends in a typed
/// [`SandboxError`](crate::SandboxError) and the next run starts fresh.
///
/// ```
/// use std::time::Duration;
/// use signet_sandbox::Limits;
/// let limits = Limits::default().with_time(Duration::from_millis(200));
/// assert_eq!(limits.time, Duration::from_millis(200));
/// assert_eq!(limits.memory_bytes, 64 << 20);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Bytes the engine may allocate (its heap: objects, strings, arrays). Default 64 MiB.
    pub memory_bytes: usize,
    /// Wall-clock time of the run, host functions included (checked while script code runs).
    /// Default 5 s.
    pub time: Duration,
    /// Bytes of stack the script's recursion may use. Default 256 KiB (each run has a thread
    /// whose stack is 2 MiB larger).
    pub stack_bytes: usize,
    /// Steps: how many times the engine may check in with the host while script code runs (it
    /// does about every 10,000 calls or loop iterations). Default 100,000.
    pub max_steps: u64,
    /// Bytes of the result's JSON and of what the script prints, each. Default 1 MiB.
    pub max_output_bytes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            memory_bytes: 64 << 20,
            time: Duration::from_secs(5),
            stack_bytes: 256 << 10,
            max_steps: 100_000,
            max_output_bytes: 1 << 20,
        }
    }
}

impl Limits {
    /// With `bytes` of engine memory.
    pub fn with_memory_bytes(mut self, bytes: usize) -> Limits {
        self.memory_bytes = bytes;
        self
    }

    /// With `time` for a run.
    pub fn with_time(mut self, time: Duration) -> Limits {
        self.time = time;
        self
    }

    /// With `bytes` of stack for recursion.
    pub fn with_stack_bytes(mut self, bytes: usize) -> Limits {
        self.stack_bytes = bytes;
        self
    }

    /// With `steps` check-ins (see [`max_steps`](Limits::max_steps)).
    pub fn with_max_steps(mut self, steps: u64) -> Limits {
        self.max_steps = steps;
        self
    }

    /// With `bytes` of result JSON and of printed text.
    pub fn with_max_output_bytes(mut self, bytes: usize) -> Limits {
        self.max_output_bytes = bytes;
        self
    }
}
