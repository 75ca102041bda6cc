//! The environment of a child process: `PATH`, and nothing else.
//!
//! When an engine is a command rather than a URL, the child would otherwise
//! inherit every variable of the parent, the token chain included, and could
//! print them, log them or pass them on. So its environment is built, never
//! inherited: `PATH`, so the command can find its tools, and nothing more.
//! An empty `PATH` is given rather than none when the snapshot has none, so
//! the child does not fall back to a built-in default search path.

use std::ffi::OsStr;
use std::process::Command;

use crate::Env;

/// The whole environment a child is given: `PATH` alone, empty when the
/// snapshot has none.
///
/// ```
/// use meterwire::{Env, child_env};
///
/// let env = Env::from_pairs([("PATH", "/usr/bin:/bin"), ("CHANT_BEHAVIOUR_TOKEN", "mw-0123456789")]);
/// assert_eq!(child_env(&env), Env::from_pairs([("PATH", "/usr/bin:/bin")]));
/// assert_eq!(child_env(&Env::new()), Env::from_pairs([("PATH", "")]));
/// ```
pub fn child_env(env: &Env) -> Env {
    Env::from_pairs([("PATH", env.get("PATH").unwrap_or(""))])
}

/// A [`Command`] for `program` whose environment is cleared and then given
/// [`child_env`] alone.
///
/// ```
/// use meterwire::{Env, child_command};
///
/// let command = child_command("engine", &Env::from_pairs([("PATH", "/usr/bin"), ("HOME", "/root")]));
/// let envs: Vec<_> = command.get_envs().collect();
/// assert_eq!(envs, [(std::ffi::OsStr::new("PATH"), Some(std::ffi::OsStr::new("/usr/bin")))]);
/// ```
pub fn child_command(program: impl AsRef<OsStr>, env: &Env) -> Command {
    let mut command = Command::new(program);
    command.env_clear();
    for (name, value) in child_env(env).iter() {
        command.env(name, value);
    }
    command
}
