//! Telling a family's members apart when the user named the family (`install kimi`):
//! Kimi Code 2.x from Kimi CLI 1.x. The signs are the members' descriptors'
//! (`Member::majors`, `Member::installed`); this runs the program and looks at the disk.

use std::ffi::OsString;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hooktrack_core::agent::Agent;
use hooktrack_core::agents::{Family, InstalledSign, Majors};

use super::InstallError;

/// Which member of `family` is installed: the major version `<program> --version` prints
/// on PATH, else the directory of the given config file (a member's `dot_dir`), else the
/// members' signs on disk, in order (Kimi: `$KIMI_CODE_HOME` or `~/.kimi-code` for Code,
/// `~/.kimi/config.toml` for the CLI).
pub fn detect_member(
    family: &'static Family,
    env: impl Fn(&str) -> Option<OsString>,
    config: Option<&Path>,
) -> Result<Agent, InstallError> {
    let members: Vec<Agent> = family.members().collect();
    let undecided = |reason: String| InstallError::Detect {
        family: family.label,
        names: members
            .iter()
            .map(|a| a.typed_name())
            .collect::<Vec<_>>()
            .join(" or "),
        reason,
    };
    if let Ok(Some(version)) = version_of(family.program) {
        let major = version
            .split('.')
            .next()
            .and_then(|m| m.parse::<u64>().ok());
        let Some(major) = major else {
            return Err(undecided(format!("unreadable version {version:?}")));
        };
        let claims = |majors: Majors| {
            members
                .iter()
                .copied()
                .find(|a| a.descriptor().family.is_some_and(|m| m.majors == majors))
        };
        if let Some(agent) = claims(Majors::Only(major)).or_else(|| claims(Majors::Others)) {
            return Ok(agent);
        }
    }
    let parent = config
        .and_then(Path::parent)
        .and_then(Path::file_name)
        .and_then(|n| n.to_str());
    if let Some(agent) = members
        .iter()
        .copied()
        .find(|a| parent == Some(a.config().dot_dir))
    {
        return Ok(agent);
    }
    if config.is_some() {
        return Err(undecided(format!(
            "no `{}` on PATH and the config's directory does not tell",
            family.program
        )));
    }
    let home = env("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    let mut looked = vec![format!("no `{}` on PATH", family.program)];
    for agent in &members {
        let location = agent.config();
        let signs = agent.descriptor().family.map_or(&[][..], |m| m.installed);
        for sign in signs {
            let found = match sign {
                InstalledSign::HomeEnvSet => location
                    .home_env
                    .and_then(&env)
                    .is_some_and(|v| !v.is_empty()),
                InstalledSign::DotDir => {
                    looked.push(format!("no ~/{}", location.dot_dir));
                    home.as_ref()
                        .is_some_and(|h| h.join(location.dot_dir).is_dir())
                }
                InstalledSign::UserFile => {
                    looked.push(format!("no ~/{}/{}", location.dot_dir, location.file));
                    home.as_ref()
                        .is_some_and(|h| h.join(location.dot_dir).join(location.file).is_file())
                }
            };
            if found {
                return Ok(*agent);
            }
        }
    }
    Err(undecided(looked.join(", ")))
}

/// The first `x.y.z` that `<program> --version` prints, within 15 s: Kimi Code 2.1.0, a
/// Node bundle, takes 2 to 3 s to print it on an idle machine and more under load, and a
/// `kimi` given up on is a Kimi nobody can name.
///
/// It runs in an empty folder of its own, removed after: a CLI may write where it runs
/// even for `--version` (Letta Code 0.25.9 makes `.letta/.lettaignore` there), and the
/// folder `hooktrack setup` was started in is the user's.
pub fn version_of(program: impl AsRef<std::ffi::OsStr>) -> io::Result<Option<String>> {
    let place = ProbeDir::new();
    let mut command = Command::new(program);
    if let Some(dir) = &place {
        command.current_dir(&dir.0);
    }
    let mut child = command
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if child.try_wait()?.is_some() {
            break;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut out = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        let _ = stdout.read_to_string(&mut out);
    }
    Ok(first_version(&out))
}

/// An empty private folder for a probe, removed with what the probe left in it. `None`
/// when none can be made: the probe then runs where hooktrack runs, as before.
struct ProbeDir(PathBuf);

impl ProbeDir {
    fn new() -> Option<Self> {
        use std::os::unix::fs::DirBuilderExt;
        static MADE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("hooktrack-probe-{}-{n}", std::process::id()));
        std::fs::DirBuilder::new().mode(0o700).create(&path).ok()?;
        Some(Self(path))
    }
}

impl Drop for ProbeDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn first_version(text: &str) -> Option<String> {
    text.split(|c: char| !(c.is_ascii_digit() || c == '.'))
        // A sentence's full stop ("GitHub Copilot CLI 1.0.102.") is not part of it.
        .map(|w| w.trim_end_matches('.'))
        .find(|w| {
            let parts: Vec<&str> = w.split('.').collect();
            parts.len() >= 2 && parts.iter().all(|p| !p.is_empty())
        })
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        assert_eq!(
            first_version("kimi, version 1.52.0\nkimi-cli is deprecated"),
            Some("1.52.0".to_owned())
        );
        assert_eq!(first_version("2.2.0"), Some("2.2.0".to_owned()));
        assert_eq!(
            first_version(
                "GitHub Copilot CLI 1.0.102.\nRun 'copilot update' to check for updates."
            ),
            Some("1.0.102".to_owned())
        );
        assert_eq!(first_version("no version"), None);
    }

    /// `letta --version` (Letta Code 0.25.9) writes `.letta/.lettaignore` where it runs:
    /// a version probe runs in a folder of its own, gone after, never where hooktrack runs.
    #[test]
    fn a_version_probe_that_writes_where_it_runs_leaves_nothing_behind() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().expect("tempdir");
        let told = tmp.path().join("where");
        let program = tmp.path().join("agent");
        std::fs::write(
            &program,
            format!(
                "#!/bin/sh\nmkdir .agent && touch .agent/ignore && pwd > '{}'\necho 'agent 1.2.3'\n",
                told.display()
            ),
        )
        .expect("write the stand-in");
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755))
            .expect("make it runnable");
        assert_eq!(version_of(&program).expect("ran"), Some("1.2.3".to_owned()));
        let ran_in = PathBuf::from(std::fs::read_to_string(&told).expect("it ran").trim());
        let here = std::env::current_dir().expect("cwd");
        assert_ne!(ran_in, here);
        assert!(!here.join(".agent").exists());
        assert!(!ran_in.exists(), "{} is left", ran_in.display());
    }
}
