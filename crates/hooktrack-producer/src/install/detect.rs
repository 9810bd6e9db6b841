//! Telling Kimi Code 2.x from Kimi CLI 1.x when the user did not say (`--variant auto`).

use std::ffi::OsString;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hooktrack_core::agent::Agent;

use super::InstallError;

const KIMIS: [Agent; 2] = [Agent::KimiCode, Agent::KimiCli];

/// Tells Kimi Code from Kimi CLI: `kimi --version` on PATH (1.x is the CLI), else the
/// directory of the given config file (`.kimi-code` or `.kimi`), else `$KIMI_CODE_HOME` or
/// `~/.kimi-code` (Code), else `~/.kimi/config.toml` (CLI).
pub fn detect_kimi(
    env: impl Fn(&str) -> Option<OsString>,
    config: Option<&Path>,
) -> Result<Agent, InstallError> {
    if let Ok(Some(version)) = kimi_version() {
        let major = version
            .split('.')
            .next()
            .and_then(|m| m.parse::<u64>().ok());
        return match major {
            Some(1) => Ok(Agent::KimiCli),
            Some(_) => Ok(Agent::KimiCode),
            None => Err(InstallError::Detect {
                reason: format!("unreadable version {version:?}"),
            }),
        };
    }
    let parent = config
        .and_then(Path::parent)
        .and_then(Path::file_name)
        .and_then(|n| n.to_str());
    if let Some(agent) = KIMIS
        .into_iter()
        .find(|a| parent == Some(a.config().dot_dir))
    {
        return Ok(agent);
    }
    if config.is_some() {
        return Err(InstallError::Detect {
            reason: "no `kimi` on PATH and the config's directory does not tell".to_owned(),
        });
    }
    let (code, cli) = (Agent::KimiCode.config(), Agent::KimiCli.config());
    if code.home_env.and_then(&env).is_some_and(|v| !v.is_empty()) {
        return Ok(Agent::KimiCode);
    }
    if let Some(home) = env("HOME").filter(|h| !h.is_empty()).map(PathBuf::from) {
        if home.join(code.dot_dir).is_dir() {
            return Ok(Agent::KimiCode);
        }
        if home.join(cli.dot_dir).join(cli.file).is_file() {
            return Ok(Agent::KimiCli);
        }
    }
    Err(InstallError::Detect {
        reason: "no `kimi` on PATH, no ~/.kimi-code, no ~/.kimi/config.toml".to_owned(),
    })
}

/// The first `x.y.z` that `kimi --version` prints, within 5 s.
fn kimi_version() -> io::Result<Option<String>> {
    let mut child = Command::new("kimi")
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let deadline = Instant::now() + Duration::from_secs(5);
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

fn first_version(text: &str) -> Option<String> {
    text.split(|c: char| !(c.is_ascii_digit() || c == '.'))
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
        assert_eq!(first_version("no version"), None);
    }
}
