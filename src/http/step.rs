//! Middleware steps that do not await, as plain `tower` services.
//!
//! axum's `from_fn` is written for steps that await: for every request it
//! boxes the rest of the stack (`Next`), the step's own future, and, inside
//! `Next`, the inner future once more. The steps around every route (the
//! request metrics, `Connection: close` after an early refusal, the `Host`
//! guard) decide before the request and adjust the answer after it, with
//! nothing to await, so they are a [`Step`]: `before` and `after` around
//! the inner future, nested without a box. With the MCP gate's own
//! service (`super::mcp_gate`), this took allocations and most of the
//! time a profile put between the metrics layer and the gate away
//! (issue 30, docs/benchmarks.md, "The middleware steps without boxes").

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use tower::{Layer, Service};

/// One synchronous step around a request.
pub trait Step: Clone + Send + Sync + 'static {
    /// What `before` learns from the request and `after` needs.
    type Carry: Send + 'static;

    /// `Ok` lets the request go on; `Err` is the answer in its place, and
    /// nothing inside this step sees the request.
    #[expect(
        clippy::result_large_err,
        reason = "the answer axum sends in the request's place"
    )]
    fn before(&self, request: &Request) -> Result<Self::Carry, Response>;

    /// The answer as it leaves this step.
    fn after(&self, carry: Self::Carry, response: Response) -> Response;
}

/// Wraps a service in a [`Step`].
#[derive(Clone)]
pub struct StepLayer<T>(pub T);

impl<T: Step, S> Layer<S> for StepLayer<T> {
    type Service = StepService<T, S>;

    fn layer(&self, inner: S) -> Self::Service {
        StepService {
            step: self.0.clone(),
            inner,
        }
    }
}

/// A service behind a [`Step`].
#[derive(Clone)]
pub struct StepService<T, S> {
    step: T,
    inner: S,
}

impl<T, S> Service<Request> for StepService<T, S>
where
    T: Step,
    S: Service<Request, Error = Infallible>,
    S::Response: IntoResponse,
{
    type Response = Response;
    type Error = Infallible;
    type Future = StepFuture<T, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        match self.step.before(&request) {
            Ok(carry) => StepFuture::Passed {
                inner: self.inner.call(request),
                after: Some((self.step.clone(), carry)),
            },
            Err(answer) => StepFuture::Answered {
                answer: Some(answer),
            },
        }
    }
}

pin_project_lite::pin_project! {
    /// The inner service's answer, passed through the step's `after`; or
    /// the step's own answer.
    #[project = StepFutureProjection]
    pub enum StepFuture<T: Step, F> {
        /// The request went on; `after` is taken when the answer comes.
        Passed {
            #[pin]
            inner: F,
            after: Option<(T, T::Carry)>,
        },
        /// The step answered; the answer is taken when polled.
        Answered { answer: Option<Response> },
    }
}

impl<T, F, R> Future for StepFuture<T, F>
where
    T: Step,
    F: Future<Output = Result<R, Infallible>>,
    R: IntoResponse,
{
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            StepFutureProjection::Answered { answer } => Poll::Ready(Ok(answer
                .take()
                .expect("a step's own answer is taken once: polled after it was ready"))),
            StepFutureProjection::Passed { inner, after } => {
                let Ok(response) = ready!(inner.poll(cx));
                let (step, carry) = after
                    .take()
                    .expect("the inner answer is taken once: polled after it was ready");
                Poll::Ready(Ok(step.after(carry, response.into_response())))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use axum::body::Body;
    use axum::http::{HeaderValue, StatusCode};
    use tower::ServiceExt;

    use super::*;

    /// Refuses a request carrying `x-refuse`, and stamps what it read from
    /// the request on the answer.
    #[derive(Clone)]
    struct Stamp;

    impl Step for Stamp {
        type Carry = String;

        fn before(&self, request: &Request) -> Result<String, Response> {
            if request.headers().contains_key("x-refuse") {
                let mut refused = Response::new(Body::from("refused"));
                *refused.status_mut() = StatusCode::FORBIDDEN;
                return Err(refused);
            }
            Ok(request.uri().path().to_owned())
        }

        fn after(&self, path: String, mut response: Response) -> Response {
            response
                .headers_mut()
                .insert("x-path", HeaderValue::from_str(&path).unwrap());
            response
        }
    }

    fn counting_inner(
        calls: Arc<AtomicUsize>,
    ) -> impl Service<
        Request,
        Response = Response,
        Error = Infallible,
        Future = impl Future<Output = Result<Response, Infallible>> + Send,
    > + Clone {
        tower::service_fn(move |_request: Request| {
            calls.fetch_add(1, Ordering::SeqCst);
            async { Ok::<_, Infallible>(Response::new(Body::from("inner"))) }
        })
    }

    #[tokio::test]
    async fn a_passed_request_reaches_the_inner_service_and_its_answer_goes_through_after() {
        let calls = Arc::new(AtomicUsize::new(0));
        let service = StepLayer(Stamp).layer(counting_inner(calls.clone()));
        let request = Request::builder()
            .uri("/mcp/all")
            .body(Body::empty())
            .unwrap();

        let response = service.oneshot(request).await.unwrap();

        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.headers()["x-path"], "/mcp/all");
    }

    #[tokio::test]
    async fn a_refused_request_gets_the_steps_answer_and_never_reaches_the_inner_service() {
        let calls = Arc::new(AtomicUsize::new(0));
        let service = StepLayer(Stamp).layer(counting_inner(calls.clone()));
        let request = Request::builder()
            .uri("/mcp")
            .header("x-refuse", "1")
            .body(Body::empty())
            .unwrap();

        let response = service.oneshot(request).await.unwrap();

        assert_eq!(calls.load(Ordering::SeqCst), 0);
        assert_eq!(response.status(), StatusCode::FORBIDDEN);
        assert!(!response.headers().contains_key("x-path"));
    }

    #[tokio::test]
    async fn steps_nest_outermost_first_before_and_last_after() {
        #[derive(Clone)]
        struct Mark(&'static str);
        impl Step for Mark {
            type Carry = ();
            fn before(&self, _request: &Request) -> Result<(), Response> {
                Ok(())
            }
            fn after(&self, (): (), mut response: Response) -> Response {
                response
                    .headers_mut()
                    .append("x-after", HeaderValue::from_static(self.0));
                response
            }
        }
        let calls = Arc::new(AtomicUsize::new(0));
        let service = tower::ServiceBuilder::new()
            .layer(StepLayer(Mark("outer")))
            .layer(StepLayer(Mark("inner")))
            .service(counting_inner(calls));

        let response = service
            .oneshot(Request::builder().uri("/").body(Body::empty()).unwrap())
            .await
            .unwrap();

        let order: Vec<_> = response.headers().get_all("x-after").iter().collect();
        assert_eq!(order, ["inner", "outer"]);
    }
}
