use std::fs::File;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use crate::config::origin::Origin;
use crate::config::token::read::{self, MOST_WAIT, Pace, Step};

/// What the read came to: the header it would send, or what it says is
/// wrong; and every content the file held whole at some moment (the
/// only ones it may send).
pub struct Raced {
    pub read: Result<String, String>,
    pub whole: Vec<String>,
}

/// The path read, a pipe, a directory, and where new files are made.
struct Place {
    path: PathBuf,
    pipe: PathBuf,
    directory: PathBuf,
    spare: PathBuf,
}

fn place() -> &'static Place {
    static PLACE: OnceLock<Place> = OnceLock::new();
    PLACE.get_or_init(|| {
        let dir =
            std::env::temp_dir().join(format!("meterwire-fuzz-token-file-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("directory")).expect("a directory of its own");
        let pipe = dir.join("pipe");
        let made = std::process::Command::new("mkfifo").arg(&pipe).status();
        assert!(made.is_ok_and(|status| status.success()), "mkfifo");
        Place {
            path: dir.join("token"),
            pipe,
            directory: dir.join("directory"),
            spare: dir.join("spare"),
        }
    })
}

/// The content the script's byte `k` names: mostly tokens, some that
/// cannot be one.
fn content(k: u8) -> String {
    match k % 16 {
        15 => "mw fuzz Q7vX2kP9 spaced".to_owned(),
        14 => "\n".to_owned(),
        n => format!(
            "mw-fuzz-{n:x}-Q7vX2kP9zR4tL8wN{}\n",
            "z".repeat(usize::from(k % 5))
        ),
    }
}

/// The writer: one act of the script at each step and wait, and an
/// in-place rewrite under way carried on at every one, so no part of it
/// ever stands still across a wait.
struct Writer<'s> {
    script: std::slice::Iter<'s, u8>,
    place: &'static Place,
    waited: Duration,
    /// The file being rewritten in place, what is still to be written
    /// to it, and the size of each piece.
    writing: Option<(File, String, usize, usize)>,
    coarse: bool,
    whole: Vec<String>,
}

impl Writer<'_> {
    fn now(&self) -> SystemTime {
        SystemTime::now() + self.waited
    }

    /// The time a write sets, in whole seconds when the writer plays a
    /// file system that keeps no finer time.
    fn stamp(&self) -> SystemTime {
        let now = self.now();
        if !self.coarse {
            return now;
        }
        let since = now
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default();
        SystemTime::UNIX_EPOCH + Duration::from_secs(since.as_secs())
    }

    fn act(&mut self) {
        let stamp = self.stamp();
        if let Some((file, content, written, piece)) = &mut self.writing {
            let end = (*written + *piece).min(content.len());
            let _ = file.write_all(&content.as_bytes()[*written..end]);
            let _ = file.set_modified(stamp);
            *written = end;
            if end == content.len() {
                self.whole.push(std::mem::take(content));
                self.writing = None;
            }
        }
        let Some(&op) = self.script.next() else {
            return;
        };
        let place = self.place;
        match op % 8 {
            1 => {
                let _ = std::fs::remove_file(&place.spare);
                let _ = std::fs::hard_link(&place.pipe, &place.spare);
                let _ = std::fs::rename(&place.spare, &place.path);
            }
            2 => self.renamed_over(content(op >> 3)),
            3 if self.writing.is_none() => {
                // In place only over a regular file: opening a pipe to
                // write would wait for a reader.
                let regular =
                    std::fs::symlink_metadata(&place.path).is_ok_and(|metadata| metadata.is_file());
                if !regular {
                    return self.renamed_over(content(op >> 3));
                }
                if let Ok(file) = File::create(&place.path) {
                    let _ = file.set_modified(stamp);
                    let piece = 1 + usize::from(op >> 3) % 5;
                    self.writing = Some((file, content(op >> 5), 0, piece));
                }
            }
            4 => {
                let _ = std::fs::remove_file(&place.path);
            }
            5 => {
                let _ = std::fs::remove_file(&place.spare);
                let _ = std::os::unix::fs::symlink(&place.directory, &place.spare);
                let _ = std::fs::rename(&place.spare, &place.path);
            }
            6 => self.coarse = !self.coarse,
            7 => {
                if std::fs::symlink_metadata(&place.path).is_ok_and(|m| m.is_file())
                    && let Ok(file) = File::options().append(true).open(&place.path)
                {
                    let _ = file.set_modified(stamp);
                }
            }
            _ => {}
        }
    }

    /// `content` written to a new file and renamed over the path: whole
    /// the moment it is there.
    fn renamed_over(&mut self, content: String) {
        let place = self.place;
        let _ = std::fs::remove_file(&place.spare);
        if std::fs::write(&place.spare, &content).is_ok() {
            if let Ok(file) = File::options().append(true).open(&place.spare) {
                let _ = file.set_modified(self.stamp());
            }
            if std::fs::rename(&place.spare, &place.path).is_ok() {
                self.whole.push(content);
            }
        }
    }
}

impl Pace for Writer<'_> {
    fn wall(&self) -> SystemTime {
        self.now()
    }

    fn elapsed(&self) -> Duration {
        self.waited
    }

    fn wait(&mut self, wait: Duration) {
        self.waited += wait;
        self.act();
    }

    fn step(&mut self, _step: Step) {
        self.act();
    }
}

/// The file starts with `script[0]`'s content (modified an hour ago
/// when its low bit says, a moment ago otherwise); each later byte is
/// one act of the writer: nothing, a pipe renamed over the path, a
/// whole file renamed over it, an in-place rewrite in small pieces, a
/// removal, a link to a directory renamed over it, whole-second times
/// on or off, or a touch.
pub fn token_file_raced(script: &[u8]) -> Raced {
    let place = place();
    let (first, script) = script.split_first().unwrap_or((&0, &[]));
    let _ = std::fs::remove_file(&place.path);
    let start = content(*first);
    std::fs::write(&place.path, &start).expect("the first content");
    let modified = if first & 1 == 1 {
        SystemTime::now() - Duration::from_secs(3600)
    } else {
        SystemTime::now()
    };
    if let Ok(file) = File::options().append(true).open(&place.path) {
        let _ = file.set_modified(modified);
    }
    let mut writer = Writer {
        script: script.iter(),
        place,
        waited: Duration::ZERO,
        writing: None,
        coarse: false,
        whole: vec![start],
    };
    let origin = Origin::File {
        path: place.path.display().to_string(),
        variable: Some("CHANT_BEHAVIOUR_TOKEN_FILE".to_owned()),
        twin: "CHANT_BEHAVIOUR_TOKEN_FILE".to_owned(),
    };
    let read = read::read(&place.path, origin, MOST_WAIT, &mut writer)
        .map(|token| String::from_utf8_lossy(token.header().as_bytes()).into_owned())
        .map_err(|problem| problem.describe().into_string());
    Raced {
        read,
        whole: writer.whole,
    }
}
