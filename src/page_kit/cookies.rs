//! The pages' cookies, built with the `cookie` crate: `HttpOnly` always;
//! on https the `__Host-` prefix and `Secure` (the browser then refuses the
//! cookie from any other host or path); `SameSite` chosen per cookie.

use axum::http::{HeaderMap, HeaderValue, header};
use cookie::{Cookie, SameSite};

/// The name a cookie is set under: `__Host-<base>` on https, `<base>` on
/// plain-http loopback development (browsers refuse `__Host-` without TLS).
pub fn cookie_name(base: &str, secure: bool) -> String {
    if secure {
        format!("__Host-{base}")
    } else {
        base.to_owned()
    }
}

/// A `Set-Cookie` value for `value` (path `/`, `max_age` seconds).
pub fn set_cookie(
    base: &str,
    value: &str,
    secure: bool,
    same_site: SameSite,
    max_age_secs: i64,
) -> HeaderValue {
    let cookie = Cookie::build((cookie_name(base, secure), value.to_owned()))
        .path("/")
        .http_only(true)
        .secure(secure)
        .same_site(same_site)
        .max_age(cookie::time::Duration::seconds(max_age_secs))
        .build();
    HeaderValue::from_str(&cookie.encoded().to_string()).expect("cookie values are header-safe")
}

/// A `Set-Cookie` value that deletes the cookie.
pub fn clear_cookie(base: &str, secure: bool, same_site: SameSite) -> HeaderValue {
    set_cookie(base, "", secure, same_site, 0)
}

/// The value of the cookie `base` (under its secure or plain name) from the
/// request's `Cookie` headers.
pub fn read_cookie(headers: &HeaderMap, base: &str, secure: bool) -> Option<String> {
    let name = cookie_name(base, secure);
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(Cookie::split_parse_encoded)
        .filter_map(Result::ok)
        .find(|c| c.name() == name)
        .map(|c| c.value().to_owned())
        .filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secure_cookies_use_the_host_prefix_and_flags() {
        let v = set_cookie("aegis_binding", "abc", true, SameSite::Lax, 600);
        let s = v.to_str().unwrap();
        assert!(s.starts_with("__Host-aegis_binding=abc"));
        assert!(s.contains("HttpOnly") && s.contains("Secure") && s.contains("Path=/"));
        assert!(s.contains("SameSite=Lax"));
    }

    #[test]
    fn plain_http_cookies_have_no_prefix_and_no_secure_flag() {
        let v = set_cookie("aegis_csrf", "abc", false, SameSite::Strict, 600);
        let s = v.to_str().unwrap();
        assert!(s.starts_with("aegis_csrf=abc"));
        assert!(!s.contains("Secure"));
        assert!(s.contains("SameSite=Strict"));
    }

    #[test]
    fn cookies_are_read_by_their_own_name_only() {
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("other=1; aegis_csrf=tok; __Host-aegis_csrf=sec"),
        );
        assert_eq!(read_cookie(&h, "aegis_csrf", false).as_deref(), Some("tok"));
        assert_eq!(read_cookie(&h, "aegis_csrf", true).as_deref(), Some("sec"));
        assert_eq!(read_cookie(&h, "missing", false), None);
    }
}
