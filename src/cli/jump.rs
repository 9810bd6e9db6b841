//! `hooktrack jump`: the tmux menu of the agents that wait for you (a key binding runs
//! it; `hooktrack setup` prints the line).

use std::process::ExitCode;
use std::time::Duration;

use clap::Args;

use hooktrack::error_chain;
use hooktrack::watch::{TmuxTarget, jump};

use super::fail;

/// Open a tmux menu of the agents that wait for you, newest first: blocked on a
/// question, or a turn ended in a pane you have not looked at since. Each line names the
/// agent, its window and pane, and what it waits on; choosing one switches to that pane.
/// It reads what `hooktrack watch --tmux` publishes; with nothing waiting it says so.
/// Bind it to a key in ~/.tmux.conf (`hooktrack setup` prints the line):
/// bind-key W run-shell 'hooktrack jump --client "#{client_name}"'
#[derive(Args)]
pub struct JumpArgs {
    /// The tmux server: a socket name (tmux -L) or, with a `/`, a socket path (tmux -S).
    /// Default: tmux's own ($TMUX inside tmux, else the default socket).
    #[arg(long, value_name = "NAME|PATH")]
    tmux_socket: Option<String>,
    /// The client to show the menu on (#{client_name} in a key binding). Default: the
    /// one tmux picks.
    #[arg(long, value_name = "CLIENT")]
    client: Option<String>,
    /// Milliseconds after which a tmux command is killed.
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(1..))]
    tmux_timeout_ms: u64,
}

pub fn run(args: &JumpArgs) -> ExitCode {
    let target = TmuxTarget {
        socket: args.tmux_socket.clone(),
        timeout: Duration::from_millis(args.tmux_timeout_ms),
    };
    match jump(&target, args.client.as_deref()) {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => fail(&error_chain(&e)),
    }
}
