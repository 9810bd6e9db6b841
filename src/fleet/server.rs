//! Which NATS server, and how hooktrack proves who it is there.

use std::path::PathBuf;
use std::time::Duration;

use thiserror::Error;

/// A NATS server and the credentials to use with it.
#[derive(Clone, Debug, Default)]
pub struct NatsServer {
    /// `nats://HOST:PORT` (or `tls://…`; `nats://user:pass@host` works too).
    pub url: String,
    pub auth: NatsAuth,
    pub tls: NatsTls,
}

/// How hooktrack authenticates; the server's own auth decides what it may do.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub enum NatsAuth {
    /// Nothing beyond what the URL holds.
    #[default]
    None,
    /// A `.creds` file (a user JWT and its nkey seed), as `nsc` writes it.
    Creds(PathBuf),
    /// A file holding an nkey seed (`SU…`).
    Nkey(PathBuf),
    UserPassword {
        user: String,
        password: String,
    },
    /// A file holding the server's token.
    Token(PathBuf),
}

/// TLS beyond the system's roots.
#[derive(Clone, Debug, Default)]
pub struct NatsTls {
    /// A CA certificate (PEM) to trust for the server.
    pub ca: Option<PathBuf>,
    /// A client certificate and its key (PEM).
    pub client: Option<(PathBuf, PathBuf)>,
}

/// Why the fleet cannot start or go on.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum FleetError {
    #[error("not a NATS server address: `{url}` (expected nats://HOST:PORT)")]
    BadUrl { url: String },
    #[error("cannot read {what} {}", path.display())]
    Credentials {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot connect to {url}")]
    Connect {
        url: String,
        #[source]
        source: async_nats::ConnectError,
    },
    #[error("cannot start the fleet thread")]
    Thread {
        #[source]
        source: std::io::Error,
    },
}

/// How long a request to JetStream may take before it counts as failed (the server away).
pub(crate) const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);

impl NatsServer {
    /// Checks the address before any thread starts: `nats://`, `tls://` or a bare
    /// `HOST:PORT`.
    pub(crate) fn check(&self) -> Result<(), FleetError> {
        let rest = self
            .url
            .strip_prefix("nats://")
            .or_else(|| self.url.strip_prefix("tls://"))
            .unwrap_or(&self.url);
        let host_port = rest.rsplit('@').next().unwrap_or(rest);
        let ok = !host_port.is_empty()
            && !host_port.contains('/')
            && host_port
                .rsplit_once(':')
                .is_none_or(|(_, port)| port.parse::<u16>().is_ok());
        if ok {
            Ok(())
        } else {
            Err(FleetError::BadUrl {
                url: self.url.clone(),
            })
        }
    }

    /// The client options: credentials, TLS, and a client that connects in the
    /// background and reconnects forever (a fleet outlives its server's restarts).
    /// `inbox` is the prefix of the client's reply subjects: a host's own, or the
    /// viewers' (docs/fleet.md's permissions let each user subscribe to its own alone).
    pub(crate) async fn options(
        &self,
        name: &str,
        inbox: &str,
    ) -> Result<async_nats::ConnectOptions, FleetError> {
        let read = |what: &'static str, path: &PathBuf| {
            std::fs::read_to_string(path)
                .map(|s| s.trim().to_owned())
                .map_err(|source| FleetError::Credentials {
                    what,
                    path: path.clone(),
                    source,
                })
        };
        let mut options = match &self.auth {
            NatsAuth::None => async_nats::ConnectOptions::new(),
            NatsAuth::Creds(path) => async_nats::ConnectOptions::with_credentials_file(path)
                .await
                .map_err(|source| FleetError::Credentials {
                    what: "the creds file",
                    path: path.clone(),
                    source,
                })?,
            NatsAuth::Nkey(path) => {
                async_nats::ConnectOptions::with_nkey(read("the nkey seed", path)?)
            }
            NatsAuth::UserPassword { user, password } => {
                async_nats::ConnectOptions::with_user_and_password(user.clone(), password.clone())
            }
            NatsAuth::Token(path) => {
                async_nats::ConnectOptions::with_token(read("the token", path)?)
            }
        };
        if let Some(ca) = &self.tls.ca {
            options = options.add_root_certificates(ca.clone()).require_tls(true);
        }
        if let Some((cert, key)) = &self.tls.client {
            options = options
                .add_client_certificate(cert.clone(), key.clone())
                .require_tls(true);
        }
        Ok(options
            .name(name)
            .custom_inbox_prefix(inbox)
            .retry_on_initial_connect()
            .max_reconnects(None)
            .connection_timeout(REQUEST_TIMEOUT)
            .request_timeout(Some(REQUEST_TIMEOUT))
            // Reconnect at once, then every half second: a restarted server is found
            // within a second, and a down one costs a few packets a second.
            .reconnect_delay_callback(|attempts| {
                Duration::from_millis(if attempts <= 1 { 0 } else { 500 })
            }))
    }
}
