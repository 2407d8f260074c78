//! The person asked inside a call, in rmcp's words (MCP 2026-07-28,
//! SEP-2322): the call's [`InCallQuestion`] as an input-required result
//! with one input request, and the client's input responses read back
//! into a [`PersonAnswer`]. The confirmation rules never see rmcp's types.

use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, InputRequest,
    InputRequests, InputRequiredResult, InputResponses,
};

use super::confirmation::{InCallQuestion, PersonAnswer, Question};

/// The key of our one input request, in `inputRequests` and
/// `inputResponses`.
pub const CONFIRM_INPUT: &str = "confirm";

/// `question` as the input-required result the client is answered with.
pub fn input_required(question: InCallQuestion) -> InputRequiredResult {
    let params = match question.question {
        Question::Form { message, schema } => ElicitRequestParams::FormElicitationParams {
            meta: None,
            message,
            // The form's schema is ours and always fits.
            requested_schema: serde_json::from_value(schema)
                .expect("the confirmation form is a valid schema"),
        },
        Question::Url { message, url, id } => ElicitRequestParams::UrlElicitationParams {
            meta: None,
            message,
            url,
            elicitation_id: id,
        },
    };
    let requests = InputRequests::from([(
        CONFIRM_INPUT.to_owned(),
        InputRequest::Elicitation(ElicitRequest::new(params)),
    )]);
    InputRequiredResult::new(Some(requests), Some(question.state))
}

/// The person's answer to our one question in a retry's input responses;
/// `None` when there is none, or it is not an elicitation's result (then
/// the person is asked again rather than taken to have said no).
pub fn person_answer(responses: Option<&InputResponses>) -> Option<PersonAnswer> {
    let value = responses?.get(CONFIRM_INPUT)?;
    let result = serde_json::from_value::<ElicitResult>(value.clone()).ok()?;
    Some(PersonAnswer {
        accepted: result.action == ElicitationAction::Accept,
        content: result.content,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_form_question_is_one_elicitation_under_our_key_with_its_state() {
        let question = InCallQuestion {
            state: "sealed".to_owned(),
            question: Question::Form {
                message: "Delete a branch. Approve this call?".to_owned(),
                schema: json!({"type": "object", "properties": {"approve": {"type": "boolean"}}}),
            },
        };
        let result = serde_json::to_value(input_required(question)).unwrap();
        assert_eq!(result["requestState"], "sealed");
        let request = &result["inputRequests"][CONFIRM_INPUT];
        assert_eq!(request["method"], "elicitation/create");
        assert_eq!(
            request["params"]["message"],
            "Delete a branch. Approve this call?"
        );
    }

    #[test]
    fn an_accepted_answer_reads_back_with_its_content_and_anything_else_is_no_answer() {
        let responses = InputResponses::from([(
            CONFIRM_INPUT.to_owned(),
            json!({"action": "accept", "content": {"approve": true}}),
        )]);
        assert_eq!(
            person_answer(Some(&responses)),
            Some(PersonAnswer {
                accepted: true,
                content: Some(json!({"approve": true})),
            })
        );
        let declined =
            InputResponses::from([(CONFIRM_INPUT.to_owned(), json!({"action": "decline"}))]);
        assert!(!person_answer(Some(&declined)).unwrap().accepted);
        let other = InputResponses::from([("other".to_owned(), json!({"action": "accept"}))]);
        assert_eq!(person_answer(Some(&other)), None);
        let garbled = InputResponses::from([(CONFIRM_INPUT.to_owned(), json!("yes"))]);
        assert_eq!(person_answer(Some(&garbled)), None);
        assert_eq!(person_answer(None), None);
    }
}
