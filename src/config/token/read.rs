//! One read of a token file: through its path, without ever blocking on
//! what the path names, and taken as a token only once the file stands
//! still.
//!
//! Two things can go wrong between a look at the path and the bytes read:
//!
//! - **What the path names changes.** A pipe renamed over the path after
//!   the look would make a plain `open` wait for a writer, forever. The
//!   file is opened without blocking (`O_NONBLOCK`, which a regular file
//!   ignores), and what was opened is checked by its own metadata (`fstat`),
//!   whatever the path names by then. The look before the open stays: a
//!   device the path names all along is then never opened at all (opening
//!   some has effects of its own).
//! - **The file is being written.** A writer that truncates the file and
//!   writes it again in small pieces leaves, for a moment, a prefix of the
//!   new token: sent, it is rejected, and learned as a secret it conceals
//!   every text that shares its prefix. A read whose size or modification
//!   time changed while it read is no token; nor is one the file was
//!   modified less than [`SETTLE`] before: it is read again once that has
//!   passed. Where the modification time cannot say (a time in whole
//!   seconds, from a file system that keeps no finer one, or one in the
//!   future), two reads [`AGAIN_AFTER`] apart must agree. A read waits this
//!   way within the budget it is given, and then says the file is still
//!   being written, which keeps the last good token.

use std::fs::File;
use std::io::Read as _;
use std::path::Path;
use std::time::{Duration, SystemTime};

use super::Token;
use super::content::{FileProblem, MAX_FILE_BYTES, parse};
use crate::config::origin::Origin;

/// How long a file must have stood still before what it holds is taken as
/// a whole token: far longer than a writer takes between the pieces of one
/// token, and short enough to wait for once a rotation.
pub(crate) const SETTLE: Duration = Duration::from_millis(100);

/// How far apart two reads are that must agree, where the modification
/// time cannot say how long the file has stood still.
pub(crate) const AGAIN_AFTER: Duration = Duration::from_millis(20);

/// The longest one read waits for a file to stand still, whatever the
/// send's deadline: a file rewritten without pause keeps the last good
/// token rather than a reader.
pub(crate) const MOST_WAIT: Duration = Duration::from_secs(1);

/// The points of a read between its system calls, where a writer may act.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// The path was looked at.
    Looked,
    /// The file was opened.
    Opened,
    /// Its bytes were read.
    Read,
}

/// The time a read runs in: the wall clock file times are read against,
/// how long the read has taken, and its waits. A real read runs in
/// [`Clock`]; the fuzz target runs one in a time of its own, which acts on
/// the file at each step and wait.
pub(crate) trait Pace {
    /// Now, by the clock file times are set by.
    fn wall(&self) -> SystemTime;
    /// How long since the read began.
    fn elapsed(&self) -> Duration;
    /// Waits `wait`.
    fn wait(&mut self, wait: Duration);
    /// The read reached `step`.
    fn step(&mut self, _step: Step) {}
}

/// The real clocks, and a real sleep (a read runs on a blocking thread).
pub(crate) struct Clock {
    started: std::time::Instant,
}

impl Clock {
    pub(crate) fn new() -> Clock {
        Clock {
            started: std::time::Instant::now(),
        }
    }
}

impl Pace for Clock {
    fn wall(&self) -> SystemTime {
        SystemTime::now()
    }

    fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    fn wait(&mut self, wait: Duration) {
        std::thread::sleep(wait);
    }
}

/// What one look at the file found: its bytes, and its modification time
/// (when the platform keeps one).
#[derive(PartialEq, Eq)]
struct Seen {
    bytes: Vec<u8>,
    modified: Option<SystemTime>,
}

/// Why one look found no bytes to judge.
enum Unread {
    /// The file changed while it was read: look again.
    Moving,
    /// What the path names holds no token.
    Failed(FileProblem),
}

impl From<FileProblem> for Unread {
    fn from(problem: FileProblem) -> Unread {
        Unread::Failed(problem)
    }
}

/// The token the file at `path` holds once it stands still, looked at as
/// often as that takes within `budget`; what is wrong never quotes the
/// content.
pub(crate) fn read(
    path: &Path,
    origin: Origin,
    budget: Duration,
    pace: &mut impl Pace,
) -> Result<Token, FileProblem> {
    let mut last: Option<Seen> = None;
    loop {
        let wait = match look(path, pace) {
            Ok(seen) => match unsettled_for(&seen, last.as_ref(), pace.wall()) {
                None => return parse(&seen.bytes, origin),
                Some(wait) => {
                    last = Some(seen);
                    wait
                }
            },
            Err(Unread::Moving) => {
                last = None;
                AGAIN_AFTER
            }
            Err(Unread::Failed(problem)) => return Err(problem),
        };
        if pace.elapsed().saturating_add(wait) > budget {
            return Err(FileProblem::Changing);
        }
        pace.wait(wait);
    }
}

/// How much longer the file must stand still before `seen` is a token;
/// `None` when it has stood still long enough. `last` is what the look
/// before found.
fn unsettled_for(seen: &Seen, last: Option<&Seen>, now: SystemTime) -> Option<Duration> {
    let agreed = || (last != Some(seen)).then_some(AGAIN_AFTER);
    let Some(modified) = seen.modified else {
        return agreed();
    };
    // A time in whole seconds may be one truncated by a file system that
    // keeps no finer one: it can say a file is a second older than it is.
    let coarse = modified
        .duration_since(SystemTime::UNIX_EPOCH)
        .is_ok_and(|since| since.subsec_nanos() == 0);
    match now.duration_since(modified) {
        Ok(_) if coarse => agreed(),
        Ok(age) if age >= SETTLE => None,
        // A little past the time, so the look after it finds it passed.
        Ok(age) => Some(SETTLE - age + Duration::from_millis(1)),
        // Modified in the future (another machine's clock, on a network
        // file system): the time says nothing.
        Err(_) => agreed(),
    }
}

/// One look at the file: what the path names, opened without blocking,
/// checked by its own metadata, and read whole if that did not change
/// while it was read.
fn look(path: &Path, pace: &mut impl Pace) -> Result<Seen, Unread> {
    let problem = |error: std::io::Error| match error.kind() {
        std::io::ErrorKind::NotFound => FileProblem::Missing,
        _ => FileProblem::Unreadable,
    };
    let looked = std::fs::metadata(path).map_err(problem)?;
    if !looked.is_file() {
        return Err(FileProblem::NotAFile.into());
    }
    if looked.len() > MAX_FILE_BYTES {
        return Err(FileProblem::TooLarge.into());
    }
    pace.step(Step::Looked);
    let mut file = open(path).map_err(problem)?;
    pace.step(Step::Opened);
    // The file opened, whatever the path names by now.
    let before = file.metadata().map_err(problem)?;
    if !before.is_file() {
        return Err(FileProblem::NotAFile.into());
    }
    if before.len() > MAX_FILE_BYTES {
        return Err(FileProblem::TooLarge.into());
    }
    let mut bytes = Vec::new();
    (&mut file)
        .take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(problem)?;
    pace.step(Step::Read);
    let after = file.metadata().map_err(problem)?;
    let modified = after.modified().ok();
    let read = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    if after.len() != before.len() || modified != before.modified().ok() || read != after.len() {
        return Err(Unread::Moving);
    }
    Ok(Seen { bytes, modified })
}

/// Opens `path` for reading without waiting: a pipe opens at once, with
/// no writer, and is then refused by its metadata; nor does a terminal
/// become the process's own.
#[cfg(unix)]
fn open(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    File::options()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
}

/// Elsewhere a path names no pipe that an open waits on.
#[cfg(not(unix))]
fn open(path: &Path) -> std::io::Result<File> {
    File::open(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    const TOKEN: &str = "mw-read-Q7vX2kP9zR4tL8wN";

    fn origin() -> Origin {
        Origin::variable_named("CHANT_BEHAVIOUR_TOKEN_FILE")
    }

    /// A directory of the test's own.
    fn dir(name: &str) -> PathBuf {
        let path = std::env::temp_dir().join(format!(
            "meterwire-token-read-{}-{name}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("a temp directory");
        path
    }

    fn dated(path: &Path, modified: SystemTime) {
        std::fs::File::options()
            .write(true)
            .open(path)
            .and_then(|file| file.set_modified(modified))
            .expect("set the time");
    }

    fn aged(path: &Path, age: Duration) {
        dated(path, SystemTime::now() - age);
    }

    /// A time of the test's own: waits pass at once, each one counted, and
    /// `act` runs at every step and wait (`None`), given the time it is
    /// (which a write it makes sets as the file's).
    struct Script<F: FnMut(Option<Step>, SystemTime)> {
        waited: Duration,
        waits: u32,
        act: F,
    }

    impl<F: FnMut(Option<Step>, SystemTime)> Pace for Script<F> {
        fn wall(&self) -> SystemTime {
            SystemTime::now() + self.waited
        }
        fn elapsed(&self) -> Duration {
            self.waited
        }
        fn wait(&mut self, wait: Duration) {
            self.waited += wait;
            self.waits += 1;
            let now = self.wall();
            (self.act)(None, now);
        }
        fn step(&mut self, step: Step) {
            let now = self.wall();
            (self.act)(Some(step), now);
        }
    }

    fn script<F: FnMut(Option<Step>, SystemTime)>(act: F) -> Script<F> {
        Script {
            waited: Duration::ZERO,
            waits: 0,
            act,
        }
    }

    #[test]
    fn a_file_long_still_is_read_once() {
        let dir = dir("still");
        let file = dir.join("token");
        std::fs::write(&file, TOKEN).expect("write");
        aged(&file, Duration::from_secs(60));
        let mut pace = script(|_, _| {});
        let token = read(&file, origin(), MOST_WAIT, &mut pace).expect("a token");
        assert_eq!(
            token.header().to_str().ok(),
            Some(format!("Bearer {TOKEN}").as_str())
        );
        assert_eq!(pace.waits, 0);
    }

    #[test]
    fn a_file_modified_a_moment_ago_is_read_again_once_it_has_stood_still() {
        let dir = dir("moment");
        let file = dir.join("token");
        std::fs::write(&file, TOKEN).expect("write");
        let mut pace = script(|_, _| {});
        read(&file, origin(), MOST_WAIT, &mut pace).expect("a token");
        assert_eq!(pace.waits, 1);
        // What was left of the time to stand still, once.
        assert!(pace.waited > Duration::ZERO && pace.waited <= SETTLE + Duration::from_millis(1));
    }

    #[test]
    fn a_pipe_swapped_in_after_the_look_is_refused_by_what_was_opened() {
        let dir = dir("pipe");
        let (file, pipe) = (dir.join("token"), dir.join("pipe"));
        std::fs::write(&file, TOKEN).expect("write");
        aged(&file, Duration::from_secs(60));
        let made = std::process::Command::new("mkfifo").arg(&pipe).status();
        assert!(made.is_ok_and(|status| status.success()), "mkfifo");
        let mut pace = script(|step, _| {
            if step == Some(Step::Looked) {
                std::fs::rename(&pipe, &file).expect("the pipe over the path");
            }
        });
        let problem = read(&file, origin(), MOST_WAIT, &mut pace).err();
        assert_eq!(problem, Some(FileProblem::NotAFile));
    }

    #[test]
    fn a_prefix_written_while_the_file_is_read_is_not_taken_for_the_token() {
        let dir = dir("torn");
        let file = dir.join("token");
        std::fs::write(&file, &TOKEN[..5]).expect("write");
        aged(&file, Duration::from_secs(60));
        // The writer's next pieces land while the first look reads and
        // while the read waits; the file then stands still.
        let mut pieces = TOKEN.as_bytes()[5..]
            .chunks(6)
            .collect::<Vec<_>>()
            .into_iter();
        let mut pace = script(|step, now| {
            if matches!(step, Some(Step::Opened) | None)
                && let Some(piece) = pieces.next()
            {
                use std::io::Write as _;
                let mut writer = std::fs::OpenOptions::new()
                    .append(true)
                    .open(&file)
                    .expect("open to append");
                writer.write_all(piece).expect("append");
                writer.set_modified(now).expect("the time of the write");
            }
        });
        let token = read(&file, origin(), MOST_WAIT, &mut pace).expect("the whole token");
        assert_eq!(
            token.header().to_str().ok(),
            Some(format!("Bearer {TOKEN}").as_str())
        );
        assert!(pace.waits >= 3, "{}", pace.waits);
    }

    #[test]
    fn a_file_that_never_stands_still_is_said_to_be_changing_within_the_budget() {
        let dir = dir("changing");
        let file = dir.join("token");
        std::fs::write(&file, TOKEN).expect("write");
        let mut n = 0u32;
        let mut pace = script(|step, now| {
            if step.is_none() {
                n += 1;
                std::fs::write(&file, format!("{TOKEN}{n}")).expect("rewrite");
                dated(&file, now);
            }
        });
        let problem = read(&file, origin(), MOST_WAIT, &mut pace).err();
        assert_eq!(problem, Some(FileProblem::Changing));
        assert!(pace.waited <= MOST_WAIT);
    }

    #[test]
    fn a_whole_second_or_future_time_needs_two_reads_that_agree() {
        let seen = |bytes: &[u8], modified| Seen {
            bytes: bytes.to_vec(),
            modified: Some(modified),
        };
        let now = SystemTime::now();
        let whole = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let future = now + Duration::from_secs(3600);
        for modified in [whole, future] {
            let first = seen(b"ab", modified);
            assert_eq!(unsettled_for(&first, None, now), Some(AGAIN_AFTER));
            assert_eq!(
                unsettled_for(&first, Some(&seen(b"a", modified)), now),
                Some(AGAIN_AFTER)
            );
            assert_eq!(
                unsettled_for(&first, Some(&seen(b"ab", modified)), now),
                None
            );
        }
        let old = now - Duration::from_millis(1500);
        assert_eq!(unsettled_for(&seen(b"ab", old), None, now), None);
    }
}
