//! HTTP to a Paimon REST catalog server (Java `HttpClient`, `RESTApi`'s request helpers,
//! `ResourcePaths`, `DefaultErrorHandler`): JSON bodies, bearer-token and `header.*` headers,
//! paths under `/v1/<prefix>/`, and the server's `ErrorResponse` mapped to tidelake's errors.
//!
//! Invariants: every path segment is encoded as Java's `RESTUtil.encodeString` encodes it
//! (form encoding: `t$branch_b` is `t%24branch_b`), so both clients name the same resource; a
//! response outside 2xx is an error, never a value ([`RestError`] keeps its code and resource
//! type for the callers that tell cases apart); a request that got no answer is an
//! [`Error::Io`] (the outcome of a POST is then unknown).

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use reqwest::{Method, StatusCode};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;

use crate::error::{Error, Result};

/// Java `HttpClientUtils`: connect and whole-request limits.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(60);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(180);

/// `RESTApi.MAX_RESULTS` / `PAGE_TOKEN`: paged listings.
const MAX_RESULTS: &str = "maxResults";
const PAGE_TOKEN: &str = "pageToken";

/// The server's answer to a failed request (Java `ErrorResponse`).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ErrorResponse {
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    resource_type: Option<String>,
    #[serde(default)]
    resource_name: Option<String>,
}

/// The server's answer to `GET /v1/config` (Java `ConfigResponse`, Iceberg's too).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ConfigResponse {
    #[serde(default)]
    defaults: BTreeMap<String, String>,
    #[serde(default)]
    overrides: BTreeMap<String, String>,
}

impl ConfigResponse {
    /// The client's properties as the server has them used: its defaults, then `own`, then
    /// its overrides.
    pub(crate) fn merge(
        self,
        own: impl IntoIterator<Item = (String, String)>,
    ) -> BTreeMap<String, String> {
        let mut merged = self.defaults;
        merged.extend(own);
        merged.extend(self.overrides);
        merged
    }
}

/// A request the server refused, before it became a tidelake [`Error`].
#[derive(Debug)]
pub(crate) struct RestError {
    pub(crate) status: StatusCode,
    /// `ErrorResponse.resourceType`: `DATABASE`, `TABLE`, `COLUMN`, `SNAPSHOT`, ...
    pub(crate) resource_type: Option<String>,
    pub(crate) resource_name: Option<String>,
    message: String,
    what: String,
}

impl RestError {
    pub(crate) fn is(&self, status: StatusCode) -> bool {
        self.status == status
    }

    /// The tidelake error (Java `DefaultErrorHandler`'s exceptions, as the catalog maps them).
    pub(crate) fn into_error(self) -> Error {
        let detail = format!(
            "{} (HTTP {}: {})",
            self.what,
            self.status.as_u16(),
            self.message
        );
        match self.status.as_u16() {
            400 => Error::invalid(format!("the REST catalog refused {detail}")),
            404 => {
                let what = self
                    .resource_type
                    .as_deref()
                    .map_or("resource".to_string(), str::to_ascii_lowercase);
                let name = self.resource_name.as_deref().unwrap_or_default();
                Error::not_found(what, format!("'{name}' in the REST catalog: {detail}"))
            }
            409 => Error::AlreadyExists(format!(
                "{} '{}' (REST catalog: {detail})",
                self.resource_type
                    .as_deref()
                    .map_or("resource".to_string(), str::to_ascii_lowercase),
                self.resource_name.as_deref().unwrap_or_default()
            )),
            501 => Error::Unsupported(format!("the REST catalog does not implement {detail}")),
            401 => io_error(format!("not authorized by the REST catalog: {detail}")),
            403 => io_error(format!("forbidden by the REST catalog: {detail}")),
            _ => io_error(format!("the REST catalog failed {detail}")),
        }
    }
}

/// An [`Error::Io`] for a REST failure (storage errors are what the caller retries later).
fn io_error(message: String) -> Error {
    Error::Io {
        path: "rest catalog".into(),
        source: object_store::Error::Generic {
            store: "rest",
            source: message.into(),
        },
    }
}

/// Java `RESTUtil.encodeString` (`URLEncoder` form encoding) of one path segment.
pub(crate) fn encode(segment: &str) -> String {
    url::form_urlencoded::byte_serialize(segment.as_bytes()).collect()
}

/// A connection to one REST catalog server. Cheap to clone.
#[derive(Clone)]
pub(crate) struct RestClient {
    http: reqwest::Client,
    base: String,
    /// `/v1/<prefix>` once the config is known (`/v1` before).
    root: String,
}

impl fmt::Debug for RestClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RestClient({}{})", self.base, self.root)
    }
}

impl RestClient {
    /// A client of the server at `uri` sending `headers` (the bearer token among them).
    pub(crate) fn new(uri: &str, headers: &BTreeMap<String, String>) -> Result<RestClient> {
        let base = uri.trim_end_matches('/');
        let parsed = url::Url::parse(base)
            .map_err(|e| Error::invalid(format!("REST catalog 'uri' {uri:?} is not a URL: {e}")))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(Error::invalid(format!(
                "REST catalog 'uri' {uri:?} must be http:// or https://"
            )));
        }
        let mut map = HeaderMap::new();
        for (k, v) in headers {
            let name = HeaderName::from_bytes(k.as_bytes())
                .map_err(|e| Error::invalid(format!("REST header name {k:?}: {e}")))?;
            let value = HeaderValue::from_str(v)
                .map_err(|e| Error::invalid(format!("REST header {k:?} value: {e}")))?;
            map.insert(name, value);
        }
        map.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let http = reqwest::Client::builder()
            .default_headers(map)
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(REQUEST_TIMEOUT)
            .build()
            .map_err(|e| io_error(format!("cannot build the HTTP client: {e}")))?;
        Ok(RestClient {
            http,
            base: base.to_string(),
            root: "/v1".to_string(),
        })
    }

    /// The same client under `/v1/<prefix>` (`prefix` from the server's config; may be empty).
    pub(crate) fn with_prefix(mut self, prefix: Option<&str>) -> RestClient {
        self.root = match prefix.filter(|p| !p.is_empty()) {
            Some(p) => format!("/v1/{}", encode(p)),
            None => "/v1".to_string(),
        };
        self
    }

    /// `bearer` auth header of `token.provider=bear` (Java `BearTokenAuthProvider`).
    pub(crate) fn bearer(token: &str) -> (String, String) {
        (AUTHORIZATION.to_string(), format!("Bearer {token}"))
    }

    /// The path of `segments` under the root, each encoded.
    pub(crate) fn path(&self, segments: &[&str]) -> String {
        let mut path = self.root.clone();
        for s in segments {
            path.push('/');
            path.push_str(&encode(s));
        }
        path
    }

    /// `GET /v1/config?warehouse=...` (before the prefix is known). A 404 means the server
    /// serves no warehouse of that name.
    pub(crate) async fn config(&self, warehouse: Option<&str>) -> Result<ConfigResponse> {
        let query: Vec<(&str, &str)> = warehouse.map(|w| ("warehouse", w)).into_iter().collect();
        let answer = self
            .send(
                Method::GET,
                "/v1/config",
                &query,
                None,
                "the config request",
            )
            .await;
        answer.map_err(|e| match e.status {
            StatusCode::NOT_FOUND => Error::invalid(format!(
                "the REST catalog at {} serves no warehouse {:?} (catalog option 'warehouse' \
                 names one the server serves)",
                self.base,
                warehouse.unwrap_or_default()
            )),
            _ => e.into_error(),
        })
    }

    pub(crate) async fn get<T: DeserializeOwned>(
        &self,
        path: &str,
        what: &str,
    ) -> std::result::Result<T, RestError> {
        self.send(Method::GET, path, &[], None, what).await
    }

    /// Every element of a paged listing (`field` of each page, pages chained by
    /// `nextPageToken`).
    pub(crate) async fn get_pages(
        &self,
        path: &str,
        field: &str,
        what: &str,
    ) -> std::result::Result<Vec<Value>, RestError> {
        let mut all = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut query = vec![(MAX_RESULTS, "0")];
            if let Some(t) = &token {
                query.push((PAGE_TOKEN, t.as_str()));
            }
            let mut page: Value = self.send(Method::GET, path, &query, None, what).await?;
            if let Some(Value::Array(items)) = page.get_mut(field).map(Value::take) {
                all.extend(items);
            }
            match page.get("nextPageToken").and_then(Value::as_str) {
                Some(next) if !next.is_empty() && token.as_deref() != Some(next) => {
                    token = Some(next.to_string())
                }
                _ => return Ok(all),
            }
        }
    }

    /// The names of a paged listing of names.
    pub(crate) async fn get_all(&self, path: &str, field: &str, what: &str) -> Result<Vec<String>> {
        let all = self
            .get_pages(path, field, what)
            .await
            .map_err(RestError::into_error)?;
        Ok(all
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect())
    }

    pub(crate) async fn post<T: DeserializeOwned>(
        &self,
        path: &str,
        body: &Value,
        what: &str,
    ) -> std::result::Result<T, RestError> {
        self.send(Method::POST, path, &[], Some(body), what).await
    }

    /// A `POST` whose answer carries nothing the caller needs: done, or the refusal as an error.
    pub(crate) async fn post_command(&self, path: &str, body: &Value, what: &str) -> Result<()> {
        self.post::<Value>(path, body, what)
            .await
            .map(drop)
            .map_err(RestError::into_error)
    }

    pub(crate) async fn delete(&self, path: &str, what: &str) -> Result<()> {
        self.send::<Value>(Method::DELETE, path, &[], None, what)
            .await
            .map(drop)
            .map_err(RestError::into_error)
    }

    /// One request; a body that is empty reads as JSON `null`. A request without an answer
    /// (connection refused, timeout) fails as a 503 would: a storage error, outcome unknown.
    async fn send<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        body: Option<&Value>,
        what: &str,
    ) -> std::result::Result<T, RestError> {
        let url = format!("{}{path}", self.base);
        let mut request = self.http.request(method.clone(), &url);
        if !query.is_empty() {
            request = request.query(query);
        }
        if let Some(body) = body {
            request = request.body(body.to_string());
        }
        let failed = |status: StatusCode, message: String| RestError {
            status,
            resource_type: None,
            resource_name: None,
            message,
            what: format!("{what} ({method} {path})"),
        };
        let response = request.send().await.map_err(|e| {
            failed(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("no answer from {}: {e}", self.base),
            )
        })?;
        let status = response.status();
        let bytes = response.bytes().await.map_err(|e| {
            failed(
                status,
                format!("the answer from {} broke off: {e}", self.base),
            )
        })?;
        if !status.is_success() {
            let error: ErrorResponse = serde_json::from_slice(&bytes).unwrap_or_default();
            let mut e = failed(
                status,
                error
                    .message
                    .filter(|m| !m.is_empty())
                    .unwrap_or_else(|| String::from_utf8_lossy(&bytes).into_owned()),
            );
            e.resource_type = error.resource_type;
            e.resource_name = error.resource_name;
            return Err(e);
        }
        let bytes = if bytes.is_empty() {
            &b"null"[..]
        } else {
            &bytes[..]
        };
        serde_json::from_slice(bytes).map_err(|e| {
            failed(
                StatusCode::BAD_GATEWAY,
                format!("the answer is not the JSON expected: {e}"),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_are_encoded_as_javas_url_encoder_does() {
        assert_eq!(encode("t$branch_b"), "t%24branch_b");
        assert_eq!(encode("a b/c"), "a+b%2Fc");
        let client = RestClient::new("http://127.0.0.1:1/", &BTreeMap::new())
            .unwrap()
            .with_prefix(Some("my wh"));
        assert_eq!(
            client.path(&["databases", "db", "tables", "t$branch_b"]),
            "/v1/my+wh/databases/db/tables/t%24branch_b"
        );
    }

    #[test]
    fn server_errors_map_to_tidelake_kinds() {
        use crate::error::ErrorKind;
        let error = |code: u16, resource: Option<&str>| {
            RestError {
                status: StatusCode::from_u16(code).unwrap(),
                resource_type: resource.map(str::to_string),
                resource_name: Some("db.t".into()),
                message: "m".into(),
                what: "loading table".into(),
            }
            .into_error()
        };
        assert_eq!(error(404, Some("TABLE")).kind(), ErrorKind::NotFound);
        assert!(error(404, Some("TABLE"))
            .to_string()
            .starts_with("table not found"));
        assert_eq!(error(409, None).kind(), ErrorKind::AlreadyExists);
        assert_eq!(error(400, None).kind(), ErrorKind::Invalid);
        assert_eq!(error(501, None).kind(), ErrorKind::Unsupported);
        for code in [401, 403, 500, 503] {
            assert_eq!(error(code, None).kind(), ErrorKind::Io, "{code}");
        }
    }

    #[test]
    fn bad_uris_are_refused() {
        for uri in ["ftp://h", "not a url"] {
            let e = RestClient::new(uri, &BTreeMap::new()).unwrap_err();
            assert!(e.to_string().contains("uri"), "{e}");
        }
    }
}
