//! `hooktrack watch`'s fleet flags: `--publish nats://…` and `watch nats://…`.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use hooktrack::fleet::{NatsAuth, NatsServer, NatsTls, PublishConfig, ViewConfig};

/// How to reach the NATS server (for `--publish` and for `watch nats://…`). Secrets come
/// from files or the environment, never from the command line.
#[derive(Args, Clone, Debug, Default)]
pub struct NatsArgs {
    /// Publish every session's updates to this NATS JetStream server
    /// (nats://HOST:PORT): the `--ndjson` fields and this host's name, no prompts or tool
    /// inputs, on `hooktrack.v1.<host>.<agent>.<session>`, and each session's latest
    /// state in the key-value bucket `hooktrack` (docs/fleet.md).
    #[arg(long, value_name = "URL")]
    pub publish: Option<String>,
    /// This host's name in the fleet (default: the machine's host name).
    #[arg(long, value_name = "NAME")]
    pub host: Option<String>,
    /// Seconds a session's state stays in the bucket when its host stops publishing.
    #[arg(long, value_name = "SECS", default_value_t = 300, value_parser = clap::value_parser!(u64).range(3..))]
    pub fleet_ttl: u64,
    /// A NATS creds file (user JWT and nkey seed, as `nsc` writes it).
    #[arg(long, value_name = "FILE")]
    pub nats_creds: Option<PathBuf>,
    /// A file holding an nkey seed.
    #[arg(long, value_name = "FILE")]
    pub nats_nkey: Option<PathBuf>,
    /// A NATS user; the password is read from $HOOKTRACK_NATS_PASSWORD.
    #[arg(long, value_name = "USER")]
    pub nats_user: Option<String>,
    /// A file holding the server's token.
    #[arg(long, value_name = "FILE")]
    pub nats_token_file: Option<PathBuf>,
    /// A CA certificate (PEM) to trust for the server (TLS required).
    #[arg(long, value_name = "FILE")]
    pub nats_ca: Option<PathBuf>,
    /// A client certificate (PEM), with --nats-key (TLS required).
    #[arg(long, value_name = "FILE", requires = "nats_key")]
    pub nats_cert: Option<PathBuf>,
    /// The client certificate's key (PEM).
    #[arg(long, value_name = "FILE", requires = "nats_cert")]
    pub nats_key: Option<PathBuf>,
}

impl NatsArgs {
    /// The server at `url` with these credentials.
    pub fn server(&self, url: &str) -> Result<NatsServer, String> {
        let given = [
            self.nats_creds.is_some(),
            self.nats_nkey.is_some(),
            self.nats_user.is_some(),
            self.nats_token_file.is_some(),
        ];
        if given.iter().filter(|g| **g).count() > 1 {
            return Err(
                "give one of --nats-creds, --nats-nkey, --nats-user and --nats-token-file".into(),
            );
        }
        let auth = if let Some(path) = &self.nats_creds {
            NatsAuth::Creds(path.clone())
        } else if let Some(path) = &self.nats_nkey {
            NatsAuth::Nkey(path.clone())
        } else if let Some(user) = &self.nats_user {
            let password = std::env::var("HOOKTRACK_NATS_PASSWORD")
                .map_err(|_| "--nats-user needs $HOOKTRACK_NATS_PASSWORD".to_owned())?;
            NatsAuth::UserPassword {
                user: user.clone(),
                password,
            }
        } else if let Some(path) = &self.nats_token_file {
            NatsAuth::Token(path.clone())
        } else {
            NatsAuth::None
        };
        Ok(NatsServer {
            url: url.to_owned(),
            auth,
            tls: NatsTls {
                ca: self.nats_ca.clone(),
                client: self.nats_cert.clone().zip(self.nats_key.clone()),
            },
        })
    }

    /// What `--publish` asks for, if it does.
    pub fn publish(&self) -> Result<Option<PublishConfig>, String> {
        let Some(url) = &self.publish else {
            return Ok(None);
        };
        let host = match &self.host {
            Some(h) => h.clone(),
            None => host_name(),
        };
        let mut config = PublishConfig::new(self.server(url)?, host);
        config.ttl = Duration::from_secs(self.fleet_ttl);
        Ok(Some(config))
    }
}

/// The machine's name, as `uname -n` says (Linux keeps it in /proc).
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "localhost".into())
}

/// True for a `watch` path that names a NATS server rather than a store.
pub fn is_server(path: &std::path::Path) -> bool {
    path.to_str()
        .is_some_and(|p| p.starts_with("nats://") || p.starts_with("tls://"))
}

/// What `watch nats://…` reads: every host's sessions on that server.
pub fn view(url: &str, nats: &NatsArgs) -> Result<ViewConfig, String> {
    Ok(ViewConfig {
        server: nats.server(url)?,
    })
}
