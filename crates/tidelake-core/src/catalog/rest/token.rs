//! Data tokens (Java `RESTTokenFileIO`, `RESTApi.loadTableToken`): when the server's options
//! say `data-token.enabled`, the credentials for a table's files are the server's to give.
//! `GET .../tables/{t}/token` answers file-system options in Paimon's S3 names
//! (`s3.access-key`, `s3.secret-key`, `fs.s3a.session.token`, ..., and possibly the endpoint or
//! region) and the time they expire; the table's object store signs every request
//! with the token's credentials, fetching a new token before the old one expires.
//!
//! Invariants:
//! * a token's credentials win over any configured for the table (the server decides who
//!   reads its tables, as in Java, where the token is merged over the catalog options); its
//!   other options apply when the table is opened, over the catalog's;
//! * a token is used until [`REFRESH_MARGIN`] before it expires (Java's
//!   `TOKEN_EXPIRATION_SAFE_TIME_MILLIS`), or until half its lifetime is left when it was
//!   issued for less than twice that margin; the request after that fetches a new one, and
//!   concurrent requests wait for that one fetch;
//! * tokens are for S3 tables (the file systems tidelake reaches with Paimon's option names);
//!   a token for a table elsewhere is an [`Error::Unsupported`], a token without an access
//!   key pair an [`Error::Invalid`] naming the table, a refused token request the server's
//!   error: never a request sent unsigned.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use object_store::aws::AwsCredential;
use object_store::CredentialProvider;
use serde::Deserialize;
use tokio::sync::Mutex;

use super::client::{RestClient, RestError};
use crate::catalog::identifier::Identifier;
use crate::error::{Error, Result};
use crate::io::{paimon_s3, Env, StorageOptions};

/// Java `RESTTokenFileIO.TOKEN_EXPIRATION_SAFE_TIME_MILLIS`: how long before its expiry a
/// token is replaced.
const REFRESH_MARGIN: Duration = Duration::from_secs(3600);

/// The object_store keys a token's credentials arrive as (after [`paimon_s3::translate`]).
const ACCESS_KEY: &str = "aws_access_key_id";
const SECRET_KEY: &str = "aws_secret_access_key";
const SESSION_TOKEN: &str = "aws_session_token";

/// `GET table token` (Java `GetTableTokenResponse`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct GetTableTokenResponse {
    #[serde(default)]
    token: BTreeMap<String, String>,
    expires_at_millis: i64,
}

/// One token: its credential, the other storage options it carries, and when to replace it.
struct DataToken {
    credential: Arc<AwsCredential>,
    options: StorageOptions,
    refresh_at_ms: i64,
}

/// The credentials of one table's files, from the server's tokens (an object_store
/// [`CredentialProvider`]).
#[derive(Debug)]
pub(crate) struct TokenCredentials {
    client: RestClient,
    table: Identifier,
    location: String,
    env: Env,
    /// The token in use and when to replace it.
    current: Mutex<(Arc<AwsCredential>, i64)>,
}

impl TokenCredentials {
    /// Fetch the first token of table `table` (at `location`): the provider, and the token's
    /// storage options other than its credentials.
    pub(crate) async fn fetch(
        client: &RestClient,
        table: &Identifier,
        location: &str,
        env: Env,
    ) -> Result<(TokenCredentials, StorageOptions)> {
        if !paimon_s3::is_s3(location) {
            return Err(Error::Unsupported(format!(
                "the REST catalog vends data tokens ('data-token.enabled') for table '{table}' at \
                 '{location}': tidelake takes data tokens for S3 tables only"
            )));
        }
        let first = load(client, table, location, &env).await?;
        let provider = TokenCredentials {
            client: client.clone(),
            table: table.clone(),
            location: location.to_string(),
            env,
            current: Mutex::new((first.credential, first.refresh_at_ms)),
        };
        Ok((provider, first.options))
    }
}

/// Ask the server for a token of `table` and read it.
async fn load(
    client: &RestClient,
    table: &Identifier,
    location: &str,
    env: &Env,
) -> Result<DataToken> {
    let path = client.path(&[
        "databases",
        &table.database,
        "tables",
        &table.table,
        "token",
    ]);
    let answer: GetTableTokenResponse = client
        .get(&path, &format!("loading the data token of table '{table}'"))
        .await
        .map_err(RestError::into_error)?;
    let mut options = paimon_s3::translate(location, &answer.token)?;
    let missing = |key: &str| {
        Error::invalid(format!(
            "the data token of table '{table}' has no {key} (it has: {})",
            answer.token.keys().cloned().collect::<Vec<_>>().join(", ")
        ))
    };
    let key_id = options
        .remove(ACCESS_KEY)
        .ok_or_else(|| missing("access key"))?;
    let secret_key = options
        .remove(SECRET_KEY)
        .ok_or_else(|| missing("secret key"))?;
    let token = options.remove(SESSION_TOKEN);
    let now = env.now_millis();
    let lifetime = answer.expires_at_millis.saturating_sub(now).max(0);
    let margin = (REFRESH_MARGIN.as_millis() as i64).min(lifetime / 2);
    Ok(DataToken {
        credential: Arc::new(AwsCredential {
            key_id,
            secret_key,
            token,
        }),
        options,
        refresh_at_ms: answer.expires_at_millis.saturating_sub(margin),
    })
}

#[async_trait]
impl CredentialProvider for TokenCredentials {
    type Credential = AwsCredential;

    async fn get_credential(&self) -> object_store::Result<Arc<AwsCredential>> {
        let mut current = self.current.lock().await;
        if self.env.now_millis() < current.1 {
            return Ok(current.0.clone());
        }
        let fresh = load(&self.client, &self.table, &self.location, &self.env)
            .await
            .map_err(|e| object_store::Error::Generic {
                store: "S3",
                source: Box::new(e),
            })?;
        log::debug!(
            "refreshed the data token of table '{}' (next refresh at {} ms)",
            self.table,
            fresh.refresh_at_ms
        );
        *current = (fresh.credential, fresh.refresh_at_ms);
        Ok(current.0.clone())
    }
}
