//! The [`Checkpoint`] format: its fields, its byte encoding and codec (checksum or signature,
//! size limit), its checks, and [`CheckpointError`]. Capturing a run into one and restoring a
//! session from one are the runner's (`runner/checkpoint.rs`).

use std::collections::HashMap;
use std::sync::Arc;

use super::StoreError;

use serde::{Deserialize, Serialize};

use crate::event::{InterruptInfo, RecordedEvent};
use crate::message::Message;
use crate::run_path::RunPath;
use crate::stream::StreamError;

/// The checkpoint format version this build writes. It reads this one and version 1 (which
/// stored each event's whole run path instead of an index into a table of shared steps).
pub const FORMAT_VERSION: u32 = 2;

/// The older format version this build still reads.
const READS_ALSO: u32 = 1;

const MAGIC: &str = "agentflow-checkpoint";

/// Why a checkpoint could not be saved, read or resumed. Nothing stored is changed when one is
/// returned.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointError {
    /// No checkpoint has this id.
    #[error("no checkpoint '{id}' in the store; check the id the interrupted run printed")]
    NotFound {
        /// The id asked for.
        id: String,
    },
    /// The bytes are not an agentflow checkpoint at all.
    #[error("checkpoint '{id}' is not an agentflow checkpoint (it does not start with '{MAGIC}')")]
    Foreign {
        /// The id.
        id: String,
    },
    /// The checkpoint was written by a format version this build cannot read.
    #[error(
        "checkpoint '{id}' has format version {found}; this build reads versions 1 to {supported} only"
    )]
    UnsupportedVersion {
        /// The id.
        id: String,
        /// The version in the checkpoint.
        found: String,
        /// The version this build reads.
        supported: u32,
    },
    /// The checkpoint is damaged: truncated, altered, or not valid JSON.
    #[error("checkpoint '{id}' is corrupt: {reason}")]
    Corrupt {
        /// The id.
        id: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The checkpoint was taken in a flow of another shape than the runner's.
    #[error(
        "checkpoint '{id}' was taken in a flow of shape `{saved}`, but this runner's flow has \
         shape `{current}`; resume it with the flow it was taken in"
    )]
    ShapeChanged {
        /// The id.
        id: String,
        /// The saved shape.
        saved: String,
        /// The runner's shape.
        current: String,
    },
    /// The checkpoint's run was already resumed to its end (or is being resumed right now).
    #[error("checkpoint '{id}' was already resumed; a checkpoint resumes once")]
    AlreadyResumed {
        /// The id.
        id: String,
    },
    /// Another worker is resuming the checkpoint right now (it holds the claim). It can be
    /// taken over only if that worker dies and its lease runs out.
    #[error(
        "checkpoint '{id}' is being resumed by another worker; it can be taken over only if \
         that worker's lease runs out, in {remaining:?}"
    )]
    Claimed {
        /// The id.
        id: String,
        /// How long the holder's lease still runs.
        remaining: std::time::Duration,
    },
    /// Resume data was addressed to an interrupt the checkpoint does not have.
    #[error("checkpoint '{id}' has no interrupt '{interrupt}'; its interrupts are: {known}")]
    UnknownInterrupt {
        /// The checkpoint id.
        id: String,
        /// The interrupt id given.
        interrupt: String,
        /// The interrupt ids it has, comma-separated.
        known: String,
    },
    /// The runner has no checkpoint store.
    #[error(
        "this runner has no checkpoint store; give it one with RunnerBuilder::checkpoint_store"
    )]
    NoStore,
    /// A recorded message stream failed, so the session cannot be saved whole.
    #[error("checkpoint '{id}' cannot be saved: a recorded stream failed: {source}")]
    Stream {
        /// The id.
        id: String,
        /// The stream's error.
        #[source]
        source: StreamError,
    },
    /// The checkpoint is larger than the codec reads
    /// ([`CheckpointCodec::max_checkpoint_bytes`]); nothing of it was decoded.
    #[error(
        "checkpoint '{id}' is {size} bytes, more than the {limit} this runner reads \
         (CheckpointCodec::max_checkpoint_bytes); raise it with RunnerBuilder::checkpoint_codec if the \
         checkpoint is trusted and legitimately this large"
    )]
    TooLarge {
        /// The id.
        id: String,
        /// Its size in bytes.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// The runner has a checkpoint key and the checkpoint is not signed with it (not signed at
    /// all, or its signature does not match its content): it was altered, forged, or written
    /// with another key. It is not used.
    #[error(
        "checkpoint '{id}' is not authentic: {reason}; it was altered, forged, or signed with \
         another key, and is not used"
    )]
    BadSignature {
        /// The id.
        id: String,
        /// What did not verify.
        reason: String,
    },
    /// The checkpoint is signed but the runner has no key to check it with.
    #[error(
        "checkpoint '{id}' is signed, but this runner has no checkpoint key to verify it; give it \
         the key it was written with (RunnerBuilder::checkpoint_key)"
    )]
    KeyMissing {
        /// The id.
        id: String,
    },
    /// The checkpoint names agents or run paths that are not in the runner's flow.
    #[error(
        "checkpoint '{id}' does not fit this flow: {reason}; it was altered or taken in \
         another flow, and is not used"
    )]
    NotInFlow {
        /// The id.
        id: String,
        /// What does not fit.
        reason: String,
    },
    /// The store failed.
    #[error(transparent)]
    Store(StoreError),
}

impl From<StoreError> for CheckpointError {
    /// The store's "not found", "already resumed" and "claimed" become this error's own.
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound { id } => CheckpointError::NotFound { id },
            StoreError::AlreadyResumed { id } => CheckpointError::AlreadyResumed { id },
            StoreError::Claimed { id, remaining, .. } => CheckpointError::Claimed { id, remaining },
            e => CheckpointError::Store(e),
        }
    }
}

/// Whether a checkpoint still waits for its resume.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckpointStatus {
    /// Interrupted, waiting to be resumed.
    Interrupted,
    /// Resumed to the end of its run; kept as a record.
    Resumed,
}

/// Everything a run needs to resume.
///
/// Serialised with its run paths as one table of steps (each step once: its parent's index and
/// its agent), every event naming its path by index, so a checkpoint grows linearly with the
/// run however deep the transfers go.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "wire::CheckpointIn")]
pub struct Checkpoint {
    /// Interrupted or already resumed.
    pub status: CheckpointStatus,
    /// The flow's shape (see [`FlowAgent::shape`](crate::FlowAgent::shape)).
    pub shape: String,
    /// Its fingerprint, as 16 hex digits.
    pub fingerprint: String,
    /// Whether the run streamed.
    pub streaming: bool,
    /// The run's input.
    pub root_input: Vec<Message>,
    /// The session's recorded events, in order.
    pub events: Vec<RecordedEvent>,
    /// The session values.
    pub values: HashMap<String, serde_json::Value>,
    /// The interrupts the run stopped at, in the order they happened.
    pub interrupts: Vec<InterruptInfo>,
    /// The run's random id, the same in every checkpoint of its lineage (it scopes the tools'
    /// idempotency keys; empty in checkpoints written before it existed).
    #[serde(default)]
    pub run_id: String,
    /// How many resumes of this run's lineage came before this checkpoint.
    #[serde(default)]
    pub resumes: u32,
    /// For the checkpoint of a thread's turn written by the resume of an earlier part: the
    /// thread record that goes with it. Saving the checkpoint and appending the record are two
    /// writes; a resume that finds the thread one record short appends this one first (see
    /// [`ThreadPart`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_part: Option<ThreadPart>,
}

/// The thread record that goes with a turn's checkpoint, written into the checkpoint itself so
/// the pair is replayed whole: the resumed part of turn `turn`, to be appended at position
/// `seq` of its thread, holding the checkpoint's events from `events_from` on and ending at the
/// checkpoint's interrupts.
///
/// A resumed turn interrupted again completes its claim (the new checkpoint) and then appends
/// its thread record. A worker killed between the two leaves the thread one record short; the
/// next resume of the thread claims the new checkpoint, sees that the thread's version is still
/// `seq`, and appends the record before it runs anything (a compare-and-swap: of two such
/// resumes one appends it). So a resumed part is recorded exactly once however the worker dies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadPart {
    /// The thread.
    pub thread: String,
    /// The record's position in the thread.
    pub seq: u64,
    /// The turn it continues.
    pub turn: u64,
    /// When the resumed part ended, in milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// What started the part (the resume and its data).
    pub start: super::RecordStart,
    /// The run path the turn started at.
    pub started_at: RunPath,
    /// The index of the first of the checkpoint's events the record holds (the events before
    /// it were recorded by earlier records).
    pub events_from: usize,
    /// Who started the part (for a resume: who answered the interrupt), as the record says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<Arc<str>>,
}

impl Checkpoint {
    /// The scope of the idempotency keys of the tool calls made while resuming this
    /// checkpoint: the same for every resume of it, different for every other checkpoint.
    pub fn idempotency_scope(&self) -> String {
        format!("{}.{}", self.run_id, self.resumes)
    }

    /// Encodes the checkpoint, unsigned (see the [store module docs](crate::store) and
    /// [`CheckpointCodec`]).
    pub fn encode(&self) -> Vec<u8> {
        CheckpointCodec::default().encode(self)
    }

    /// Decodes bytes read for checkpoint `id` with the default [`CheckpointCodec`] (no key,
    /// the default size limit).
    pub fn decode(id: &str, bytes: &[u8]) -> Result<Checkpoint, CheckpointError> {
        CheckpointCodec::default().decode(id, bytes)
    }

    /// Checks that every agent and run path this checkpoint names is one `known` accepts, and
    /// that every run path starts at `root`: a checkpoint naming an agent the flow does not
    /// have (or a path like `evil/../../x`) is refused before anything runs.
    pub fn check_names(
        &self,
        id: &str,
        root: &str,
        known: impl Fn(&str) -> bool,
    ) -> Result<(), CheckpointError> {
        self.check_names_in(id, root, known, |_| false)
    }

    /// Like [`check_names`](Checkpoint::check_names), where the agents `opaque` accepts are
    /// custom agents that may run agents of their own (a wrapper of a tree): at and below one
    /// of them, events and interrupts may come from agents the flow does not have, and run
    /// paths may name them (that agent's `resume` is given them), as long as each is a plain
    /// name (not empty, no `/`, no control character).
    pub fn check_names_in(
        &self,
        id: &str,
        root: &str,
        known: impl Fn(&str) -> bool,
        opaque: impl Fn(&str) -> bool,
    ) -> Result<(), CheckpointError> {
        let refuse = |reason: String| CheckpointError::NotInFlow {
            id: id.to_owned(),
            reason,
        };
        // Steps shared by many paths are checked once: linear in the checkpoint.
        let mut seen = std::collections::HashSet::new();
        // Steps of opaque agents, and the steps below them.
        let mut opens = std::collections::HashSet::new();
        let mut inside = std::collections::HashSet::new();
        let mut check_path = |what: &str, path: &RunPath| -> Result<bool, CheckpointError> {
            if path.is_empty() {
                return Err(refuse(format!("{what} has an empty run path")));
            }
            let mut fault: Option<String> = None;
            let tip = path.visit_new_steps(&mut seen, |link, parent, agent| {
                if fault.is_some() {
                    return;
                }
                let below = parent.is_some_and(|p| opens.contains(&p) || inside.contains(&p));
                if below {
                    inside.insert(link);
                    if agent.is_empty()
                        || agent.contains('/')
                        || agent.chars().any(char::is_control)
                    {
                        fault = Some(format!("names agent '{agent}', which is not a plain name"));
                    }
                    return;
                }
                // A map's item step `NAME[i]` stands for the map `NAME`.
                let agent = map_item_step(agent).unwrap_or(agent);
                if parent.is_none() && agent != root {
                    fault = Some(format!("does not start at '{root}'"));
                } else if !known(agent) {
                    fault = Some(format!("names agent '{agent}' that the flow does not have"));
                } else if opaque(agent) {
                    opens.insert(link);
                }
            });
            match fault {
                Some(fault) => Err(refuse(format!(
                    "{what} has run path `{path}`, which {fault}"
                ))),
                None => Ok(tip.is_some_and(|t| inside.contains(&t) || opens.contains(&t))),
            }
        };
        // An unknown agent right below the root: the root may be a wrapper that did not say so.
        let hint = |path: &RunPath| {
            if path.len() == 1 {
                format!(
                    " (if '{root}' is a custom agent that runs a tree of its own, it must say so: \
                     Agent::runs_agents_of_its_own)"
                )
            } else {
                String::new()
            }
        };
        for (k, e) in self.events.iter().enumerate() {
            let what = format!("recorded event {k}");
            let below_opaque = check_path(&what, &e.run_path)?;
            if !below_opaque && !known(&e.agent_name) {
                return Err(refuse(format!(
                    "{what} is from agent '{}', which the flow does not have{}",
                    e.agent_name,
                    hint(&e.run_path)
                )));
            }
        }
        for i in &self.interrupts {
            // Frames past a tool call are inside an agent used as a tool: its own tree, not
            // this flow's, names them (and checks them when the tool resumes).
            let ours = i.address.iter().position(|f| f.tool.is_some());
            let ours = ours.map_or(i.address.len(), |k| k + 1);
            for frame in &i.address[..ours] {
                let what = format!("interrupt '{}'", i.id);
                let below_opaque = check_path(&what, &frame.run_path)?;
                if !below_opaque && !known(&frame.agent) {
                    return Err(refuse(format!(
                        "{what} passes through agent '{}', which the flow does not have{}",
                        frame.agent,
                        hint(&frame.run_path)
                    )));
                }
            }
        }
        Ok(())
    }
}

/// How checkpoints are written and read: the size limit on reading, and an optional key that
/// signs every checkpoint written and is required of every checkpoint read.
///
/// With a key, a checkpoint carries an HMAC-SHA256 of its header and body instead of a
/// checksum; decoding verifies it (in constant time) before anything is parsed, so a
/// checkpoint edited by hand, even with its checksum recomputed, is refused
/// ([`CheckpointError::BadSignature`]), and so is an unsigned one. Keep the key secret and the
/// same across the processes that resume each other's runs. The key is the codec's, not the
/// store's: every store backend gets it through [`RunnerBuilder::checkpoint_key`](crate::RunnerBuilder::checkpoint_key).
///
/// ```
/// use agentweave_runtime::store::{Checkpoint, CheckpointCodec, CheckpointError};
/// # let checkpoint = agentweave_runtime::store::CheckpointCodec::sample();
/// let codec = CheckpointCodec::default().key(b"a secret of at least 32 bytes, please!".to_vec());
/// let bytes = codec.encode(&checkpoint);
/// assert_eq!(codec.decode("run-1", &bytes).unwrap(), checkpoint);
///
/// let other = CheckpointCodec::default().key(b"another key".to_vec());
/// assert!(matches!(other.decode("run-1", &bytes), Err(CheckpointError::BadSignature { .. })));
/// assert!(matches!(
///     codec.decode("run-1", &checkpoint.encode()),
///     Err(CheckpointError::BadSignature { .. })
/// ));
/// ```
#[derive(Clone)]
pub struct CheckpointCodec {
    /// Largest checkpoint decoded; larger ones are refused unread
    /// ([`CheckpointError::TooLarge`]). Default: the stores' read limit,
    /// [`DEFAULT_MAX_CHECKPOINT_BYTES`](crate::store::DEFAULT_MAX_CHECKPOINT_BYTES) (64 MiB).
    pub max_checkpoint_bytes: usize,
    key: Option<Arc<[u8]>>,
}

impl Default for CheckpointCodec {
    fn default() -> Self {
        CheckpointCodec {
            max_checkpoint_bytes: super::DEFAULT_MAX_CHECKPOINT_BYTES as usize,
            key: None,
        }
    }
}

impl std::fmt::Debug for CheckpointCodec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CheckpointCodec")
            .field("max_checkpoint_bytes", &self.max_checkpoint_bytes)
            .field("key", &self.key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

const SIGNATURE_PREFIX: &[u8] = b"hmac-sha256:";

impl CheckpointCodec {
    /// Signs checkpoints with `key` and requires the signature on read.
    pub fn key(mut self, key: impl Into<Vec<u8>>) -> Self {
        self.key = Some(key.into().into());
        self
    }

    /// Sets [`max_checkpoint_bytes`](Self::max_checkpoint_bytes).
    pub fn max_checkpoint_bytes(mut self, limit: usize) -> Self {
        self.max_checkpoint_bytes = limit;
        self
    }

    /// Whether checkpoints are signed.
    pub fn is_keyed(&self) -> bool {
        self.key.is_some()
    }

    /// A small checkpoint, for examples.
    #[doc(hidden)]
    pub fn sample() -> Checkpoint {
        Checkpoint {
            status: CheckpointStatus::Interrupted,
            shape: "a".into(),
            fingerprint: format!("{:016x}", crate::ids::fingerprint_of("a")),
            streaming: false,
            root_input: vec![Message::user("hi")],
            events: vec![],
            values: HashMap::new(),
            interrupts: vec![],
            run_id: "run".into(),
            resumes: 0,
            thread_part: None,
        }
    }

    fn mac(&self, key: &[u8], header: &[u8], body: &[u8]) -> hmac::Hmac<sha2::Sha256> {
        use hmac::Mac;
        let mut mac =
            hmac::Hmac::<sha2::Sha256>::new_from_slice(key).expect("HMAC takes keys of any size");
        mac.update(header);
        mac.update(body);
        mac
    }

    /// Encodes `checkpoint`: signed if this codec has a key, with a checksum otherwise.
    pub fn encode(&self, checkpoint: &Checkpoint) -> Vec<u8> {
        use hmac::Mac;
        let body = serde_json::to_vec(checkpoint).expect("a checkpoint always serialises");
        let header = format!("{MAGIC} {FORMAT_VERSION}\n");
        let mut out = header.clone().into_bytes();
        match &self.key {
            None => out.extend_from_slice(format!("{:016x}\n", fnv1a(&body)).as_bytes()),
            Some(key) => {
                let tag = self
                    .mac(key, header.as_bytes(), &body)
                    .finalize()
                    .into_bytes();
                out.extend_from_slice(SIGNATURE_PREFIX);
                for b in tag {
                    out.extend_from_slice(format!("{b:02x}").as_bytes());
                }
                out.push(b'\n');
            }
        }
        out.extend_from_slice(&body);
        out
    }

    /// Decodes bytes read for checkpoint `id`: size limit first, then header, then the
    /// signature (with a key) or the checksum (without), then the body.
    pub fn decode(&self, id: &str, bytes: &[u8]) -> Result<Checkpoint, CheckpointError> {
        if bytes.len() > self.max_checkpoint_bytes {
            return Err(CheckpointError::TooLarge {
                id: id.to_owned(),
                size: bytes.len(),
                limit: self.max_checkpoint_bytes,
            });
        }
        let corrupt = |reason: String| CheckpointError::Corrupt {
            id: id.to_owned(),
            reason,
        };
        if let Some(key_id) = super::SealingKeys::key_id_of(bytes) {
            // Sealed at rest, read without its keys (a plain store over a sealed one's data).
            return Err(CheckpointError::Store(StoreError::Sealed(
                super::SealError::NoKeys {
                    what: format!("checkpoint '{id}'"),
                    key_id: key_id.to_owned(),
                },
            )));
        }
        let Some(rest) = bytes.strip_prefix(MAGIC.as_bytes()) else {
            return Err(CheckpointError::Foreign { id: id.to_owned() });
        };
        let Some(rest) = rest.strip_prefix(b" ") else {
            return Err(CheckpointError::Foreign { id: id.to_owned() });
        };
        let line_end = rest
            .iter()
            .position(|&b| b == b'\n')
            .ok_or_else(|| corrupt("it ends inside its header".into()))?;
        let version = String::from_utf8_lossy(&rest[..line_end]).into_owned();
        if version != FORMAT_VERSION.to_string() && version != READS_ALSO.to_string() {
            return Err(CheckpointError::UnsupportedVersion {
                id: id.to_owned(),
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        let header_len = MAGIC.len() + 1 + line_end + 1;
        let rest = &rest[line_end + 1..];
        if let Some(signed) = rest.strip_prefix(SIGNATURE_PREFIX) {
            return self.decode_signed(id, &bytes[..header_len], signed);
        }
        if self.key.is_some() {
            return Err(CheckpointError::BadSignature {
                id: id.to_owned(),
                reason: "it is not signed, and this runner requires signed checkpoints".into(),
            });
        }
        if rest.len() < 17 || rest[16] != b'\n' {
            return Err(corrupt("its checksum line is missing or cut short".into()));
        }
        let expected = std::str::from_utf8(&rest[..16])
            .ok()
            .and_then(|h| u64::from_str_radix(h, 16).ok())
            .ok_or_else(|| corrupt("its checksum is not 16 hex digits".into()))?;
        let body = &rest[17..];
        let actual = fnv1a(body);
        if actual != expected {
            return Err(corrupt(format!(
                "its checksum does not match its content ({} bytes; truncated or altered)",
                body.len()
            )));
        }
        decode_body(id, body)
    }

    fn decode_signed(
        &self,
        id: &str,
        header: &[u8],
        signed: &[u8],
    ) -> Result<Checkpoint, CheckpointError> {
        use hmac::Mac;
        let Some(key) = &self.key else {
            return Err(CheckpointError::KeyMissing { id: id.to_owned() });
        };
        let bad = |reason: &str| CheckpointError::BadSignature {
            id: id.to_owned(),
            reason: reason.to_owned(),
        };
        if signed.len() < 65 || signed[64] != b'\n' {
            return Err(bad("its signature line is missing or cut short"));
        }
        let mut tag = [0u8; 32];
        for (k, pair) in signed[..64].chunks(2).enumerate() {
            let hex = std::str::from_utf8(pair).map_err(|_| bad("its signature is not hex"))?;
            tag[k] = u8::from_str_radix(hex, 16).map_err(|_| bad("its signature is not hex"))?;
        }
        let body = &signed[65..];
        self.mac(key, header, body)
            .verify_slice(&tag)
            .map_err(|_| bad("its signature does not match its content"))?;
        decode_body(id, body)
    }
}

fn decode_body(id: &str, body: &[u8]) -> Result<Checkpoint, CheckpointError> {
    serde_json::from_slice(body).map_err(|e| CheckpointError::Corrupt {
        id: id.to_owned(),
        reason: format!("its body does not decode: {e}"),
    })
}

impl Serialize for Checkpoint {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        wire::CheckpointOut::new(self).serialize(serializer)
    }
}

/// The serialised shape of a checkpoint: run paths as a table of shared steps.
mod wire {
    use std::collections::{HashMap, HashSet};
    use std::sync::Arc;

    use serde::{Deserialize, Serialize};

    use super::{Checkpoint, CheckpointStatus};
    use crate::event::{Action, InterruptInfo};
    use crate::message::Message;
    use crate::run_path::RunPath;

    #[derive(Serialize)]
    pub(super) struct CheckpointOut<'a> {
        status: CheckpointStatus,
        shape: &'a str,
        fingerprint: &'a str,
        streaming: bool,
        root_input: &'a [Message],
        /// `[parent index or null, agent]`, parents before children.
        paths: Vec<(Option<usize>, &'a str)>,
        events: Vec<EventOut<'a>>,
        values: &'a HashMap<String, serde_json::Value>,
        interrupts: &'a [InterruptInfo],
        run_id: &'a str,
        resumes: u32,
        #[serde(skip_serializing_if = "Option::is_none")]
        thread_part: Option<&'a super::ThreadPart>,
    }

    #[derive(Serialize)]
    struct EventOut<'a> {
        agent_name: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        path: Option<usize>,
        #[serde(skip_serializing_if = "Option::is_none")]
        message: Option<&'a Message>,
        #[serde(skip_serializing_if = "Option::is_none")]
        action: Option<&'a Action>,
    }

    impl<'a> CheckpointOut<'a> {
        pub(super) fn new(c: &'a Checkpoint) -> Self {
            let mut seen = HashSet::new();
            let mut index: HashMap<usize, usize> = HashMap::new();
            let mut paths: Vec<(Option<usize>, &'a str)> = Vec::new();
            let events = c
                .events
                .iter()
                .map(|e| {
                    let tip = e.run_path.visit_new_steps(&mut seen, |id, parent, agent| {
                        index.insert(id, paths.len());
                        paths.push((parent.map(|p| index[&p]), agent));
                    });
                    EventOut {
                        agent_name: &e.agent_name,
                        path: tip.map(|t| index[&t]),
                        message: e.message.as_ref(),
                        action: e.action.as_ref(),
                    }
                })
                .collect::<Vec<_>>();
            CheckpointOut {
                status: c.status,
                shape: &c.shape,
                fingerprint: &c.fingerprint,
                streaming: c.streaming,
                root_input: &c.root_input,
                paths,
                events,
                values: &c.values,
                interrupts: &c.interrupts,
                run_id: &c.run_id,
                resumes: c.resumes,
                thread_part: c.thread_part.as_ref(),
            }
        }
    }

    #[derive(Deserialize)]
    pub(super) struct CheckpointIn {
        status: CheckpointStatus,
        shape: String,
        fingerprint: String,
        streaming: bool,
        root_input: Vec<Message>,
        #[serde(default)]
        paths: Vec<(Option<usize>, Arc<str>)>,
        events: Vec<EventIn>,
        values: HashMap<String, serde_json::Value>,
        interrupts: Vec<InterruptInfo>,
        #[serde(default)]
        run_id: String,
        #[serde(default)]
        resumes: u32,
        #[serde(default)]
        thread_part: Option<super::ThreadPart>,
    }

    #[derive(Deserialize)]
    struct EventIn {
        agent_name: Arc<str>,
        /// Version 1: the whole path.
        #[serde(default)]
        run_path: Option<RunPath>,
        /// Version 2: an index into `paths`.
        #[serde(default)]
        path: Option<usize>,
        #[serde(default)]
        message: Option<Message>,
        #[serde(default)]
        action: Option<Action>,
    }

    impl TryFrom<CheckpointIn> for Checkpoint {
        type Error = String;

        fn try_from(c: CheckpointIn) -> Result<Self, String> {
            let mut table: Vec<RunPath> = Vec::with_capacity(c.paths.len());
            for (k, (parent, agent)) in c.paths.into_iter().enumerate() {
                let base = match parent {
                    None => RunPath::default(),
                    Some(p) if p < k => table[p].clone(),
                    Some(p) => {
                        return Err(format!(
                            "run path step {k} has parent {p}, which is not an earlier step"
                        ))
                    }
                };
                table.push(base.child(agent));
            }
            let events = c
                .events
                .into_iter()
                .enumerate()
                .map(|(k, e)| {
                    let run_path = match (e.path, e.run_path) {
                        (Some(i), _) => table.get(i).cloned().ok_or_else(|| {
                            format!(
                                "event {k} names run path step {i}, which the table does not have"
                            )
                        })?,
                        (None, Some(path)) => path,
                        (None, None) => RunPath::default(),
                    };
                    Ok(super::RecordedEvent {
                        agent_name: e.agent_name,
                        run_path,
                        message: e.message,
                        action: e.action,
                    })
                })
                .collect::<Result<Vec<_>, String>>()?;
            Ok(Checkpoint {
                status: c.status,
                shape: c.shape,
                fingerprint: c.fingerprint,
                streaming: c.streaming,
                root_input: c.root_input,
                events,
                values: c.values,
                interrupts: c.interrupts,
                run_id: c.run_id,
                resumes: c.resumes,
                thread_part: c.thread_part,
            })
        }
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    crate::ids::fnv1a_extend(crate::ids::FNV_OFFSET, bytes)
}

/// The map a run-path step `NAME[i]` (an item of a [`Map`](crate::workflow::Map)) stands for:
/// `NAME`; `None` for any other step.
pub(crate) fn map_item_step(step: &str) -> Option<&str> {
    let (name, rest) = step.split_once('[')?;
    let index = rest.strip_suffix(']')?;
    (!name.is_empty() && !index.is_empty() && index.bytes().all(|b| b.is_ascii_digit()))
        .then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::fingerprint_of;

    fn sample() -> Checkpoint {
        Checkpoint {
            status: CheckpointStatus::Interrupted,
            shape: "a(b)".into(),
            fingerprint: format!("{:016x}", fingerprint_of("a(b)")),
            streaming: false,
            root_input: vec![Message::user("hi")],
            events: vec![],
            values: HashMap::new(),
            interrupts: vec![],
            run_id: "r".into(),
            resumes: 0,
            thread_part: None,
        }
    }

    #[test]
    fn encode_then_decode_is_identity() {
        let c = sample();
        assert_eq!(Checkpoint::decode("x", &c.encode()).unwrap(), c);
    }

    #[test]
    fn every_truncation_is_an_error() {
        let bytes = sample().encode();
        for len in 0..bytes.len() {
            assert!(Checkpoint::decode("x", &bytes[..len]).is_err(), "len {len}");
        }
    }

    #[test]
    fn a_flipped_byte_in_the_body_is_corrupt() {
        let mut bytes = sample().encode();
        let last = bytes.len() - 3;
        bytes[last] ^= 0x01;
        assert!(matches!(
            Checkpoint::decode("x", &bytes),
            Err(CheckpointError::Corrupt { .. })
        ));
    }
}
