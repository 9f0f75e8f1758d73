//! The adapter's lines, each read against a deadline, and what every way of getting one wrong
//! becomes: the process killed and a typed [`AdapterFailure`] with its stderr tail.

use std::time::{Duration, Instant};

use super::ExternalSubject;
use crate::protocol::failure::AdapterFailure;
use crate::protocol::process::{AdapterProcess, ExitState, Next};
use crate::protocol::wire::{parse_adapter_line, AdapterMessage, KitMessage, LineError, LINE_BYTES_MAX};
use crate::sim::SubjectFailure;

/// How long a verdict waits for the adapter's stderr to close, for a complete tail.
const STDERR_SETTLE: Duration = Duration::from_millis(300);

/// How much of an offending line a verdict quotes.
const QUOTE_CHARS_MAX: usize = 200;

impl ExternalSubject {
    /// Kills the adapter and builds the failure with its stderr tail.
    pub(super) fn fail(&mut self, make: impl FnOnce(Vec<String>) -> AdapterFailure) -> SubjectFailure {
        self.failed = true;
        let tail = match &mut self.process {
            Some(process) => {
                process.kill();
                process.stderr_tail(STDERR_SETTLE)
            }
            None => Vec::new(),
        };
        make(tail).into()
    }

    /// Kills the adapter and builds the failure with its stderr tail as it was before the kill:
    /// for a breach by an adapter that is running well, whose last words as it is killed (a
    /// broken pipe, say) say nothing about the breach and would differ from run to run.
    pub(super) fn fail_running(&mut self, make: impl FnOnce(Vec<String>) -> AdapterFailure) -> SubjectFailure {
        self.failed = true;
        let tail = match &mut self.process {
            Some(process) => {
                let tail = process.stderr_tail(Duration::ZERO);
                process.kill();
                tail
            }
            None => Vec::new(),
        };
        make(tail).into()
    }

    pub(super) fn malformed(&mut self, message: String) -> SubjectFailure {
        self.fail(|stderr_tail| AdapterFailure::Malformed {
            message,
            trace_line: None,
            stderr_tail,
        })
    }

    /// The verdict of an `error` the adapter reported (`text` says when, with its code and
    /// message). A recoverable one from an adapter that serves many runs ends only the run: the
    /// kit reads the `idle` that ends the answer, takes the run's stderr, writes `reset` and keeps
    /// the process for the next run, as after a run that ended well. Any other kills the process.
    /// The verdict is the same either way; a recoverable error whose adapter then breaks the
    /// protocol (no `idle`, more after it, a wrong answer to `reset`) adds what broke it to the
    /// same text, and the process is killed (the next run starts a new one).
    pub(super) fn reported_error(&mut self, text: String, recoverable: bool) -> SubjectFailure {
        if !recoverable || !self.reusable() {
            return self.malformed(text);
        }
        let deadline = Instant::now() + self.step_timeout;
        let after = match self.read_line("`idle` after a recoverable `error`", deadline) {
            Ok(line) => line,
            // Killed: the verdict still leads with the error (the tail is the one the kill left).
            Err(_) => return self.malformed(format!("{text} (marked recoverable; no `idle` followed it)")),
        };
        let idle = std::str::from_utf8(&after)
            .ok()
            .is_some_and(|line| matches!(parse_adapter_line(line), Ok(AdapterMessage::Idle { .. })));
        let followed = self.process.as_ref().is_some_and(AdapterProcess::last_line_followed);
        if !idle || followed {
            let wrote = if idle {
                "more after its `idle`".to_string()
            } else {
                format!("{} instead of `idle`", quote_line(&String::from_utf8_lossy(&after)))
            };
            return self.malformed(format!("{text} (marked recoverable; then it wrote {wrote})"));
        }
        let stderr_tail = self
            .process
            .as_ref()
            .map(AdapterProcess::drained_stderr_tail)
            .unwrap_or_default();
        self.run_live = false;
        self.send(&KitMessage::Reset {});
        let deadline = Instant::now() + self.step_timeout;
        let breach = match self.read_message("`idle` after `reset`", deadline) {
            Ok(AdapterMessage::Idle { .. }) => {
                self.reset_pending = Some(self.run_name.take());
                String::new()
            }
            Ok(other) => {
                // Not the reset's answer: the process is not trusted with another run.
                self.failed = true;
                if let Some(process) = &mut self.process {
                    process.kill();
                }
                format!(
                    " (marked recoverable; then it answered `reset` with `{}`)",
                    other.type_name()
                )
            }
            // Killed already: the next run starts a new process.
            Err(failure) => format!(" (marked recoverable; then its `reset` failed: {failure})"),
        };
        AdapterFailure::Malformed {
            message: format!("{text}{breach}"),
            trace_line: None,
            stderr_tail,
        }
        .into()
    }

    /// Reads and parses the next adapter line before `deadline`.
    pub(super) fn read_message(
        &mut self,
        waiting_for: &str,
        deadline: Instant,
    ) -> Result<AdapterMessage, SubjectFailure> {
        let line = self.read_line(waiting_for, deadline)?;
        self.parse_line(line)
    }

    /// Reads the next adapter line before `deadline`: a crash, an exit, silence or an oversize
    /// line is the failure.
    pub(super) fn read_line(&mut self, waiting_for: &str, deadline: Instant) -> Result<Vec<u8>, SubjectFailure> {
        let Some(process) = &mut self.process else {
            return Err(SubjectFailure::Protocol {
                message: "no adapter process is running".into(),
            });
        };
        let waiting_for = waiting_for.to_string();
        let started = Instant::now();
        let next = process.next_line(deadline);
        super::count_wait(started.elapsed());
        let failure = match next {
            Next::Line(line) => return Ok(line),
            Next::Oversize => self.fail(|stderr_tail| AdapterFailure::Oversize {
                limit: LINE_BYTES_MAX,
                stderr_tail,
            }),
            Next::TimedOut => {
                let waited_ms = self.step_timeout.as_millis() as u64;
                self.fail(|stderr_tail| AdapterFailure::Timeout {
                    waited_ms,
                    waiting_for,
                    stderr_tail,
                })
            }
            Next::Closed(None) => {
                let message = format!("it closed its stdout but did not exit, while the kit waited for {waiting_for}");
                self.malformed(message)
            }
            Next::Closed(Some(ExitState::Code(0))) => self.fail(|stderr_tail| AdapterFailure::EarlyExit {
                waiting_for,
                stderr_tail,
            }),
            Next::Closed(Some(exit @ ExitState::Code(126 | 127))) if self.hello.is_none() => {
                self.fail(|stderr_tail| AdapterFailure::BadCommand {
                    status: exit.to_string(),
                    stderr_tail,
                })
            }
            Next::Closed(Some(exit)) => self.fail(|stderr_tail| AdapterFailure::Crashed {
                status: exit.to_string(),
                waiting_for,
                stderr_tail,
            }),
        };
        Err(failure)
    }

    /// Parses one adapter line: a line that is not a message is the failure.
    pub(super) fn parse_line(&mut self, line: Vec<u8>) -> Result<AdapterMessage, SubjectFailure> {
        let text = match String::from_utf8(line) {
            Ok(text) => text,
            Err(error) => {
                let line = quote_line(&String::from_utf8_lossy(error.as_bytes()));
                return Err(self.fail(|stderr_tail| AdapterFailure::Garbage {
                    line,
                    problem: "not UTF-8".into(),
                    stderr_tail,
                }));
            }
        };
        parse_adapter_line(&text).map_err(|error| {
            self.fail(|stderr_tail| match error {
                LineError::Garbage { problem } => AdapterFailure::Garbage {
                    line: quote_line(&text),
                    problem,
                    stderr_tail,
                },
                LineError::UnknownType { type_name } => AdapterFailure::UnknownMessage {
                    type_name: format!("`{type_name}`"),
                    stderr_tail,
                },
                LineError::UnknownEffectKind { kind } => AdapterFailure::UnknownEffect {
                    message: format!("unknown effect kind `{kind}`"),
                    stderr_tail,
                },
                LineError::Version { got } => AdapterFailure::Version { got, stderr_tail },
                other => AdapterFailure::Malformed {
                    message: other.to_string(),
                    trace_line: None,
                    stderr_tail,
                },
            })
        })
    }
}

pub(super) fn quote_line(line: &str) -> String {
    if line.chars().count() <= QUOTE_CHARS_MAX {
        return crate::trace::quote(line);
    }
    let cut: String = line.chars().take(QUOTE_CHARS_MAX).collect();
    format!("{}…", crate::trace::quote(&cut))
}
