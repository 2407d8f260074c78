//! The rmcp adapter's resources, prompts and completion: rmcp's requests
//! parsed into the pure plans of [`resources`](super::resources),
//! [`prompts`](super::prompts) and [`completion`](super::completion), their
//! reads run by a [`Reader`] (each one a tool call), and the answers given
//! back as rmcp's types. Errors are MCP errors: an unknown resource is
//! `-32002` with its `uri` (rmcp answers `-32602` from 2026-07-28 on),
//! bad arguments `-32602`.

use std::collections::HashMap;

use rmcp::ErrorData as McpError;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, CompletionInfo, GetPromptRequestParams, GetPromptResult,
    ListPromptsResult, ListResourceTemplatesResult, Prompt, PromptArgument, PromptMessage,
    ReadResourceRequestParams, ReadResourceResult, Reference, ResourceContents, ResourceTemplate,
    Role,
};
use serde_json::{Map, Value, json};

use super::completion::{self, Completion, Subject};
use super::prompts::{self, Read};
use super::reads::{ReadFailure, Reader};
use super::resources::{self, Contents};

/// `resources/templates/list`: the templates, the same on every URL (a
/// read is judged by the URL when it is made).
pub fn resource_templates() -> ListResourceTemplatesResult {
    ListResourceTemplatesResult::with_all_items(
        resources::TEMPLATES
            .iter()
            .map(|t| {
                let template = ResourceTemplate::new(t.uri_template, t.name)
                    .with_title(t.title)
                    .with_description(t.description);
                match t.mime_type {
                    Some(mime_type) => template.with_mime_type(mime_type),
                    None => template,
                }
            })
            .collect(),
    )
}

/// `resources/read`.
pub async fn read_resource(
    reader: &Reader<'_>,
    request: &ReadResourceRequestParams,
) -> Result<ReadResourceResult, McpError> {
    let uri = request.uri.as_str();
    // The URI echoed in an error, no longer than one this server reads.
    let shown = resources::shown_uri(uri);
    let not_found =
        |message: String| McpError::resource_not_found(message, Some(json!({"uri": shown})));
    let read = resources::parse(uri).map_err(|err| not_found(err.to_string()))?;
    let envelope = reader
        .read(read.operation, read.args.clone())
        .await
        .map_err(|failure| match failure.kind().as_deref() {
            Some("not_found") => not_found(failure.describe()),
            _ => McpError::invalid_params(failure.describe(), Some(json!({"uri": shown}))),
        })?;
    let contents = match resources::contents(&read, &envelope) {
        Contents::Text {
            mime_type,
            text,
            meta,
        } => with_meta(
            ResourceContents::text(text, uri).with_mime_type(mime_type),
            meta,
        ),
        Contents::Blob {
            mime_type,
            base64,
            meta,
        } => with_meta(
            ResourceContents::blob(base64, uri).with_mime_type(mime_type),
            meta,
        ),
    };
    Ok(ReadResourceResult::new(vec![contents]))
}

fn with_meta(contents: ResourceContents, meta: Map<String, Value>) -> ResourceContents {
    if meta.is_empty() {
        contents
    } else {
        contents.with_meta(meta.into())
    }
}

/// `prompts/list`.
pub fn prompt_list() -> ListPromptsResult {
    ListPromptsResult::with_all_items(
        prompts::PROMPTS
            .iter()
            .map(|p| {
                let arguments = p
                    .arguments
                    .iter()
                    .map(|a| {
                        PromptArgument::new(a.name)
                            .with_description(a.description)
                            .with_required(a.required)
                    })
                    .collect();
                Prompt::new(p.name, Some(p.description), Some(arguments)).with_title(p.title)
            })
            .collect(),
    )
}

/// `prompts/get`: the prompt's reads, in order (the review's comments
/// after its reviews), then its one message.
pub async fn get_prompt(
    reader: &Reader<'_>,
    request: &GetPromptRequestParams,
) -> Result<GetPromptResult, McpError> {
    let invalid = |message: String| McpError::invalid_params(message, None);
    let arguments = request.arguments.clone().unwrap_or_default();
    let plan = prompts::plan(&request.name, &arguments).map_err(|err| invalid(err.to_string()))?;
    let spec = prompts::spec(&request.name).expect("a planned prompt exists");
    let mut answers = read_all(reader, plan.clone()).await;
    if let Some((_, Err(failure))) = answers.first() {
        return Err(invalid(format!(
            "{} could not be read: {failure}",
            plan[0].heading.to_lowercase()
        )));
    }
    let more = answers
        .iter()
        .find(|(read, _)| read.operation == "gitea_repo_list_pull_reviews")
        .and_then(|(_, answer)| answer.as_ref().ok())
        .map(|reviews| prompts::review_comment_reads(&plan, reviews))
        .unwrap_or_default();
    answers.extend(read_all(reader, more).await);
    let text = prompts::message(spec, &answers);
    Ok(
        GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
            .with_description(spec.description),
    )
}

async fn read_all(reader: &Reader<'_>, reads: Vec<Read>) -> Vec<(Read, Result<String, String>)> {
    let mut answers = Vec::with_capacity(reads.len());
    for read in reads {
        let answer = reader
            .read(read.operation, read.args.clone())
            .await
            .map_err(|failure| failure.describe());
        answers.push((read, answer));
    }
    answers
}

/// `completion/complete`: the values, or none when the argument has
/// nothing to offer or its read failed (a completion never fails the
/// person's typing).
pub async fn complete(reader: &Reader<'_>, request: &CompleteRequestParams) -> CompleteResult {
    let subject = match &request.r#ref {
        Reference::Prompt(prompt) => Subject::Prompt(&prompt.name),
        Reference::Resource(resource) => Subject::Template(&resource.uri),
        // A kind of reference a later revision adds: nothing to offer.
        _ => return CompleteResult::default(),
    };
    let chosen: HashMap<String, String> = request
        .context
        .as_ref()
        .and_then(|c| c.arguments.clone())
        .unwrap_or_default();
    let typed = request.argument.value.as_str();
    let values = match completion::plan(subject, &request.argument.name, typed, &chosen) {
        Completion::Nothing => Vec::new(),
        Completion::Read { read, pick } => match reader.read(read.operation, read.args).await {
            Ok(envelope) => completion::values(&pick, &envelope, typed),
            Err(ReadFailure::Failed(_) | ReadFailure::NotReachable(_))
            | Err(ReadFailure::NeedsConfirmation(_)) => Vec::new(),
        },
    };
    CompleteResult::new(CompletionInfo::with_all_values(values).unwrap_or_default())
}
