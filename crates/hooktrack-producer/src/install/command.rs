//! The hook command hooktrack writes, its POSIX shell quoting, and the rule by which the
//! JSON installer recognises its own entries in a file.
//!
//! Why no shell-words crate: `shell-words` and `shlex` quote a safe word bare (`plain`,
//! not `'plain'`) and `shlex` uses double quotes, so neither writes the bytes hooktrack
//! has always written (and which re-installs compare against). Their `split` reads any
//! quoting the shell reads, which is the wrong question here: an entry is hooktrack's only
//! if its text is exactly what [`shell_quote`] produces, so `"/bin/hooktrack" emit
//! --observer hooktrack` or `'/a'b emit ...` (the same argv to a shell) are the user's,
//! not ours. Recognising one single-quoted word takes a dozen lines, kept here.

use hooktrack_core::agent::{Agent, ConfigFormat};

use super::{Observer, Route};

/// The label the JSON installer writes, `--observer hooktrack`, so it can find its own
/// entries again (JSON has no comments to put markers in).
pub const OBSERVER_LABEL: &str = "hooktrack";

/// What follows the quoted emitter in every labelled hooktrack command.
const COMMAND_MARK: &str = " emit --observer hooktrack ";

/// The `hooktrack emit` command for one event: absolute, every value POSIX shell-quoted,
/// no secret (the token comes from `$HOOKTRACK_TOKEN`). In a JSON hooks table it carries
/// `--observer hooktrack` right after `emit`; the Kimi block is found by its markers.
///
/// An environment-routed command names only the agent and the event, so its text is the
/// same for every session: `'/abs/hooktrack' emit --observer hooktrack --agent 'claude'
/// --event 'Stop'`.
pub fn command(agent: Agent, observer: &Observer, event: &str) -> String {
    let label = match agent.config().format {
        ConfigFormat::JsonHooks | ConfigFormat::Plugin | ConfigFormat::HookFiles => {
            format!("--observer {OBSERVER_LABEL} ")
        }
        ConfigFormat::TomlHooks => String::new(),
    };
    let emitter = shell_quote(&observer.emitter.to_string_lossy());
    match &observer.route {
        Route::Argv(to) => format!(
            "{emitter} emit {label}--url {} --dir {} --provider {} --generation {} --event {}",
            shell_quote(&to.url),
            shell_quote(&to.dir.to_string_lossy()),
            shell_quote(agent.store_name()),
            to.generation,
            shell_quote(event),
        ),
        Route::Environment => format!(
            "{emitter} emit {label}--agent {} --event {}",
            shell_quote(agent.store_name()),
            shell_quote(event),
        ),
    }
}

/// Whether a hooktrack command routes by the environment (it names no collector).
pub fn is_routed_command(command: &str) -> bool {
    !command.contains(" --url ") && command.contains(" --agent ")
}

/// Quotes one word for a POSIX shell: single quotes, each `'` written as `'\''`.
pub fn shell_quote(word: &str) -> String {
    let mut out = String::with_capacity(word.len() + 2);
    out.push('\'');
    for c in word.chars() {
        if c == '\'' {
            out.push_str("'\\''");
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    out
}

/// The identification rule: a command is hooktrack's when it is one POSIX single-quoted
/// word (as [`shell_quote`] writes it: `'...'`, a `'` inside as `'\''`) followed by
/// ` emit --observer hooktrack `.
pub fn is_hooktrack_command(command: &str) -> bool {
    after_quoted_word(command).is_some_and(|rest| rest.starts_with(COMMAND_MARK))
}

/// The `--generation N` of a hooktrack command, `None` if it has no readable one.
pub fn generation_of(command: &str) -> Option<u64> {
    let (_, rest) = command.split_once(" --generation ")?;
    rest.split(' ').next()?.parse().ok()
}

/// The program a hooktrack command runs: its leading single-quoted word, unquoted (`None`
/// when the command does not start with one).
pub fn emitter_of(command: &str) -> Option<String> {
    let rest = after_quoted_word(command)?;
    let word = &command[1..command.len() - rest.len() - 1];
    Some(word.replace("'\\''", "'"))
}

/// The text after a leading single-quoted word, `None` if there is none.
fn after_quoted_word(text: &str) -> Option<&str> {
    let mut rest = text.strip_prefix('\'')?;
    loop {
        let end = rest.find('\'')?;
        rest = &rest[end + 1..];
        match rest.strip_prefix("\\''") {
            Some(more) => rest = more,
            None => return Some(rest),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn observer() -> Observer {
        Observer {
            emitter: PathBuf::from("/opt/it's here/hooktrack"),
            route: Route::Argv(crate::install::Destination {
                url: "http://127.0.0.1:1/e".to_owned(),
                dir: PathBuf::from("/s"),
                generation: 4,
            }),
            agent_version: None,
        }
    }

    #[test]
    fn a_routed_command_is_the_same_for_every_session_and_names_no_collector() {
        let routed = Observer {
            emitter: PathBuf::from("/bin/hooktrack"),
            route: Route::Environment,
            agent_version: None,
        };
        for agent in labelled() {
            let c = command(agent, &routed, "Stop");
            assert_eq!(
                c,
                format!(
                    "'/bin/hooktrack' emit --observer hooktrack --agent '{}' --event 'Stop'",
                    agent.store_name()
                )
            );
            assert!(is_hooktrack_command(&c));
            assert!(is_routed_command(&c));
            assert_eq!(generation_of(&c), None);
            assert!(!is_routed_command(&command(agent, &observer(), "Stop")));
        }
    }

    /// The agents whose entries carry hooktrack's label (a JSON hooks table, a plugin's
    /// argv); every other agent's are found by the TOML block's markers.
    fn labelled() -> Vec<Agent> {
        let labelled: Vec<Agent> = Agent::ALL
            .into_iter()
            .filter(|a| match a.config().format {
                ConfigFormat::JsonHooks | ConfigFormat::Plugin | ConfigFormat::HookFiles => true,
                ConfigFormat::TomlHooks => false,
            })
            .collect();
        assert!(!labelled.is_empty());
        labelled
    }

    #[test]
    fn the_emit_command_quotes_every_value() {
        for agent in Agent::ALL {
            let label = if labelled().contains(&agent) {
                "--observer hooktrack "
            } else {
                ""
            };
            assert_eq!(
                command(agent, &observer(), "Stop"),
                format!(
                    "'/opt/it'\\''s here/hooktrack' emit {label}--url 'http://127.0.0.1:1/e' --dir '/s' --provider '{}' --generation 4 --event 'Stop'",
                    agent.store_name()
                )
            );
        }
    }

    #[test]
    fn the_emitter_is_read_back_from_every_command() {
        let routed = Observer {
            emitter: PathBuf::from("/bin/hooktrack"),
            route: Route::Environment,
            agent_version: None,
        };
        for agent in Agent::ALL {
            assert_eq!(
                emitter_of(&command(agent, &observer(), "Stop")).as_deref(),
                Some("/opt/it's here/hooktrack")
            );
            assert_eq!(
                emitter_of(&command(agent, &routed, "Stop")).as_deref(),
                Some("/bin/hooktrack")
            );
        }
        assert_eq!(emitter_of("hooktrack emit"), None);
        assert_eq!(emitter_of("'unterminated emit"), None);
    }

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("plain"), "'plain'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("$HOME `x` \"y\""), "'$HOME `x` \"y\"'");
    }

    #[test]
    fn the_rule_finds_rendered_commands_only() {
        for agent in labelled() {
            let c = command(agent, &observer(), "Stop");
            assert!(is_hooktrack_command(&c), "{c}");
            assert_eq!(generation_of(&c), Some(4));
        }
        assert!(!is_hooktrack_command(
            "'/usr/bin/hooktrack' emit --url 'http://x' --dir '/d'"
        ));
        assert!(!is_hooktrack_command(
            "hooktrack emit --observer hooktrack --dir /d"
        ));
        assert!(!is_hooktrack_command(
            "'/x' 'y' emit --observer hooktrack --dir /d"
        ));
        assert!(!is_hooktrack_command(
            "'unterminated emit --observer hooktrack "
        ));
        assert!(!is_hooktrack_command("'/a'b emit --observer hooktrack --x"));
        assert!(is_hooktrack_command(
            "'/a'\\''b' emit --observer hooktrack --x"
        ));
    }
}
