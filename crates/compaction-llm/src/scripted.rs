//! The scripted summarizer (feature `testing`): queued responses and errors, recorded requests.
//!
//! Lets other crates and downstream users test compaction without a model. A
//! [`ScriptedSummarizer`] is a cheap handle: clones share the queue and the record, so a test can
//! keep one clone to inspect what the compressor sent.
//!
//! Each call records the request, then answers with, in order of precedence: the always-fail
//! error if set; the seeded random failure if it fires; the next queued step; otherwise the
//! [extractive](crate::extractive) summary of the request (which always shrinks on defrag).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::error::{Error, Result};
use crate::extractive::ExtractiveSummarizer;
use crate::summarizer::{Summarizer, SummaryFuture, SummaryRequest, SummaryResponse};

/// The model name scripted responses carry unless a queued response says otherwise.
pub const SCRIPTED_MODEL: &str = "scripted";

/// A summarizer that follows a script. See the [module docs](self).
#[derive(Clone, Debug, Default)]
pub struct ScriptedSummarizer {
    state: Arc<Mutex<State>>,
}

#[derive(Debug, Default)]
struct State {
    queue: VecDeque<Result<SummaryResponse>>,
    requests: Vec<SummaryRequest>,
    always: Option<Error>,
    random: Option<RandomFailure>,
}

#[derive(Debug)]
struct RandomFailure {
    probability: f64,
    rng: u64,
    error: Error,
}

impl ScriptedSummarizer {
    /// An empty script: every call answers with the extractive summary.
    pub fn new() -> ScriptedSummarizer {
        ScriptedSummarizer::default()
    }

    /// Queues a successful response with `text` (model [`SCRIPTED_MODEL`], no usage).
    pub fn push_text(&self, text: impl Into<String>) -> &Self {
        self.push_response(SummaryResponse {
            text: text.into(),
            model: SCRIPTED_MODEL.to_owned(),
            usage: None,
            extractive: false,
            fallback: None,
        })
    }

    /// Queues a full response.
    pub fn push_response(&self, response: SummaryResponse) -> &Self {
        self.lock().queue.push_back(Ok(response));
        self
    }

    /// Queues an error.
    pub fn push_error(&self, error: Error) -> &Self {
        self.lock().queue.push_back(Err(error));
        self
    }

    /// Makes every call fail with `error` (`None` turns it off).
    pub fn fail_always(&self, error: Option<Error>) -> &Self {
        self.lock().always = error;
        self
    }

    /// Makes each call fail with `error` with the given probability, from a seeded generator
    /// (the same seed gives the same sequence of failures).
    pub fn fail_randomly(&self, probability: f64, seed: u64, error: Error) -> &Self {
        self.lock().random = Some(RandomFailure {
            probability: probability.clamp(0.0, 1.0),
            rng: seed ^ 0x9E37_79B9_7F4A_7C15,
            error,
        });
        self
    }

    /// Every request seen so far, in order.
    pub fn requests(&self) -> Vec<SummaryRequest> {
        self.lock().requests.clone()
    }

    /// Number of calls so far.
    pub fn calls(&self) -> usize {
        self.lock().requests.len()
    }

    /// Queued steps not yet consumed.
    pub fn remaining(&self) -> usize {
        self.lock().queue.len()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic in another test thread must not poison every later call.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn next(&self, req: &SummaryRequest) -> Result<SummaryResponse> {
        let mut st = self.lock();
        st.requests.push(req.clone());
        if let Some(e) = &st.always {
            return Err(e.clone());
        }
        if let Some(r) = st.random.as_mut() {
            // xorshift64*
            r.rng ^= r.rng >> 12;
            r.rng ^= r.rng << 25;
            r.rng ^= r.rng >> 27;
            let x = r.rng.wrapping_mul(0x2545_F491_4F6C_DD1D);
            let unit = (x >> 11) as f64 / (1u64 << 53) as f64;
            if unit < r.probability {
                return Err(r.error.clone());
            }
        }
        if let Some(step) = st.queue.pop_front() {
            return step;
        }
        drop(st);
        let text = ExtractiveSummarizer::default().summarize_text(req);
        Ok(SummaryResponse {
            text,
            model: SCRIPTED_MODEL.to_owned(),
            usage: None,
            extractive: true,
            fallback: None,
        })
    }
}

impl Summarizer for ScriptedSummarizer {
    fn name(&self) -> &str {
        SCRIPTED_MODEL
    }

    fn summarize<'a>(&'a self, req: &'a SummaryRequest) -> SummaryFuture<'a> {
        Box::pin(std::future::ready(self.next(req)))
    }
}
