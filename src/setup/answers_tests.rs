//! The tests of `answers`.
use std::collections::VecDeque;

use super::*;

/// Answers from a script; records what was asked and told.
#[derive(Default)]
struct Scripted {
    answers: VecDeque<&'static str>,
    secrets: VecDeque<&'static str>,
    asked: Vec<String>,
    told: Vec<String>,
}

impl Scripted {
    fn new(answers: &[&'static str], secrets: &[&'static str]) -> Self {
        Self {
            answers: answers.iter().copied().collect(),
            secrets: secrets.iter().copied().collect(),
            ..Self::default()
        }
    }
}

impl Prompt for Scripted {
    fn ask(&mut self, question: &str, default: Option<&str>) -> std::io::Result<String> {
        self.asked.push(match default {
            Some(d) => format!("{question} [{d}]"),
            None => question.to_owned(),
        });
        let answer = self.answers.pop_front().ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "script ran out")
        })?;
        Ok(match (answer.is_empty(), default) {
            (true, Some(d)) => d.to_owned(),
            _ => answer.to_owned(),
        })
    }

    fn ask_secret(&mut self, question: &str) -> std::io::Result<String> {
        self.asked.push(question.to_owned());
        self.secrets
            .pop_front()
            .map(str::to_owned)
            .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "script ran out"))
    }

    fn tell(&mut self, text: &str) {
        self.told.push(text.to_owned());
    }
}

fn flags() -> SetupArgs {
    SetupArgs {
        gitea_url: Some("https://gitea.example.com".into()),
        admin_token: Some(SecretString::from("tok123".to_owned())),
        ..SetupArgs::default()
    }
}

#[test]
fn flags_alone_take_the_defaults() {
    let a = resolve(flags(), None).unwrap();
    assert_eq!(a.gitea_url, "https://gitea.example.com");
    assert_eq!(a.admin_token.expose_secret(), "tok123");
    assert_eq!(a.bind, "127.0.0.1");
    assert_eq!(a.port, 8080);
    assert_eq!(a.public_base_url, "http://127.0.0.1:8080");
    assert_eq!(a.output, PathBuf::from("./.env"));
    assert_eq!(a.oauth_app_name.as_deref(), Some("Aegis Gitea MCP"));
    assert!(!a.force);
}

#[test]
fn without_a_terminal_a_missing_url_or_token_names_the_flag() {
    let err = resolve(SetupArgs::default(), None).unwrap_err();
    assert!(err.to_string().contains("--gitea-url"), "{err}");
    let args = SetupArgs {
        admin_token: None,
        ..flags()
    };
    let err = resolve(args, None).unwrap_err().to_string();
    assert!(
        err.contains("GITEA_TOKEN") && err.contains("--admin-token"),
        "{err}"
    );
}

#[test]
fn no_oauth_means_no_application() {
    let args = SetupArgs {
        no_oauth: true,
        ..flags()
    };
    assert!(resolve(args, None).unwrap().oauth_app_name.is_none());
}

#[test]
fn the_default_public_url_follows_the_port_and_a_loopback_bind() {
    assert_eq!(
        default_public_base_url("127.0.0.1", 9000),
        "http://127.0.0.1:9000"
    );
    assert_eq!(default_public_base_url("::1", 8080), "http://[::1]:8080");
    assert_eq!(
        default_public_base_url("0.0.0.0", 8080),
        "http://127.0.0.1:8080"
    );
    assert_eq!(
        default_public_base_url("localhost", 8080),
        "http://127.0.0.1:8080"
    );
    let args = SetupArgs {
        port: Some(9090),
        ..flags()
    };
    assert_eq!(
        resolve(args, None).unwrap().public_base_url,
        "http://127.0.0.1:9090"
    );
}

#[test]
fn a_terminal_is_asked_what_flags_did_not_give_with_defaults() {
    let mut p = Scripted::new(
        &["https://git.example.org/", "", "", "", "", "", ""],
        &["  secret-token \n"],
    );
    let a = resolve(SetupArgs::default(), Some(&mut p)).unwrap();
    assert_eq!(a.gitea_url, "https://git.example.org/");
    assert_eq!(a.admin_token.expose_secret(), "secret-token");
    assert_eq!(a.bind, "127.0.0.1");
    assert_eq!(a.port, 8080);
    assert_eq!(a.public_base_url, "http://127.0.0.1:8080");
    assert_eq!(a.oauth_app_name.as_deref(), Some("Aegis Gitea MCP"));
    assert_eq!(a.output, PathBuf::from("./.env"));
    assert_eq!(p.asked.len(), 8, "{:?}", p.asked);
    assert!(p.asked.contains(&"Port (MCP_PORT) [8080]".to_owned()));
    assert!(p.asked.contains(&"Env file to write [./.env]".to_owned()));
}

#[test]
fn flags_are_not_asked_again() {
    let mut p = Scripted::new(&["", "", "", "n", ""], &[]);
    let a = resolve(flags(), Some(&mut p)).unwrap();
    assert!(a.oauth_app_name.is_none());
    assert!(
        p.asked
            .iter()
            .all(|q| !q.contains("Gitea URL") && !q.contains("token"))
    );
}

#[test]
fn bad_answers_are_explained_and_asked_again() {
    let mut p = Scripted::new(
        &[
            "gitea.example.com",
            "https://gitea.example.com",
            "0.0.0.0",
            "99999",
            "8443",
            "http://mcp.example.com",
            "https://mcp.example.com",
            "maybe",
            "y",
            "",
            "/tmp/x.env",
        ],
        &["", "tok"],
    );
    let a = resolve(SetupArgs::default(), Some(&mut p)).unwrap();
    assert_eq!(a.bind, "0.0.0.0");
    assert_eq!(a.port, 8443);
    assert_eq!(a.public_base_url, "https://mcp.example.com");
    assert_eq!(a.output, PathBuf::from("/tmp/x.env"));
    let told = p.told.join("\n");
    assert!(
        told.contains("GITEA_URL: must be an absolute http(s) URL"),
        "{told}"
    );
    assert!(told.contains("GITEA_TOKEN: must not be empty"), "{told}");
    assert!(told.contains("MCP_PORT"), "{told}");
    assert!(told.contains("PUBLIC_BASE_URL: must use https"), "{told}");
    assert!(told.contains("answer y or n"), "{told}");
}

#[test]
fn end_of_input_is_an_error_not_a_loop() {
    let mut p = Scripted::new(&[], &[]);
    let err = resolve(SetupArgs::default(), Some(&mut p)).unwrap_err();
    assert!(matches!(err, AnswerError::Prompt { .. }), "{err}");
}

#[test]
fn a_token_with_whitespace_is_refused_without_repeating_it() {
    let args = SetupArgs {
        admin_token: Some(SecretString::from("two words".to_owned())),
        ..flags()
    };
    let err = resolve(args, None).unwrap_err().to_string();
    assert!(err.contains("GITEA_TOKEN"), "{err}");
    assert!(!err.contains("two words"), "{err}");
}

#[test]
fn a_bad_bind_is_refused_with_the_gateways_rule() {
    let args = SetupArgs {
        bind: Some("example.com".into()),
        ..flags()
    };
    let err = resolve(args, None).unwrap_err().to_string();
    assert!(err.contains("MCP_HOST: must be an IP address"), "{err}");
}
