//! The HTTPS sink: a batch of entries as JSON lines (`application/x-ndjson`,
//! each line exactly as written) in one POST, which Vector's and Fluent
//! Bit's HTTP sources, Loki's push gateway behind an agent and Splunk's HEC
//! raw endpoint take. A 2xx answer is the sink's acknowledgement: only
//! then does the cursor move, so a failed or timed-out POST is sent again
//! (a sink may see an entry twice and can drop it by `seq`; none is lost).

use std::time::Duration;

use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use secrecy::{ExposeSecret, SecretString};
use url::Url;

use super::ForwardError;
use super::follow::LogLine;

const TIMEOUT: Duration = Duration::from_secs(10);

pub struct HttpSink {
    client: reqwest::Client,
    url: Url,
    authorization: Option<HeaderValue>,
}

impl HttpSink {
    pub fn new(
        url: Url,
        extra_roots: Vec<reqwest::Certificate>,
        authorization: Option<&SecretString>,
    ) -> Result<Self, ForwardError> {
        crate::tls::install_crypto_provider();
        let client = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .connect_timeout(TIMEOUT)
            // Entries go where the operator said, nowhere else.
            .redirect(reqwest::redirect::Policy::none())
            .tls_certs_merge(extra_roots)
            .build()
            .map_err(|_| ForwardError::Config("the HTTPS client could not be built"))?;
        let authorization = match authorization {
            None => None,
            Some(secret) => {
                let mut value = HeaderValue::from_str(secret.expose_secret()).map_err(|_| {
                    ForwardError::Config("AUDIT_FORWARD_AUTHORIZATION is not a valid header value")
                })?;
                value.set_sensitive(true);
                Some(value)
            }
        };
        Ok(Self {
            client,
            url,
            authorization,
        })
    }

    pub async fn send(&mut self, lines: &[LogLine]) -> Result<(), ForwardError> {
        let mut body = String::new();
        for line in lines {
            body.push_str(&line.text);
            body.push('\n');
        }
        let mut request = self
            .client
            .post(self.url.clone())
            .header(CONTENT_TYPE, "application/x-ndjson")
            .body(body);
        if let Some(value) = &self.authorization {
            request = request.header(AUTHORIZATION, value.clone());
        }
        // The error's text names the URL at most, never the header.
        let response = request
            .send()
            .await
            .map_err(|err| ForwardError::Sink(err.without_url().to_string()))?;
        if response.status().is_success() {
            Ok(())
        } else {
            Err(ForwardError::Sink(format!(
                "the sink answered HTTP {}",
                response.status().as_u16()
            )))
        }
    }
}
