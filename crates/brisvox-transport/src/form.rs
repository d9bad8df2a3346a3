//! `application/x-www-form-urlencoded` text (webhook bodies, query strings),
//! decoded: what the carriers' answer webhooks send and sign.

/// The name/value pairs of `text` (`a=1&b=x+y`), decoded, in order. A pair
/// without `=` has an empty value; empty pairs are skipped.
pub fn parse(text: &str) -> Vec<(String, String)> {
    text.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (decode(k), decode(v)),
            None => (decode(p), String::new()),
        })
        .collect()
}

/// `s` with `+` as a space and `%XX` escapes decoded (a bad escape is kept
/// as it is; invalid UTF-8 becomes U+FFFD).
pub fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b'+', _) => {
                out.push(b' ');
                i += 1;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_are_decoded_in_order() {
        assert_eq!(
            parse("From=%2B15550100&Body=a+b&flag&&x=%zz"),
            [
                ("From".to_owned(), "+15550100".to_owned()),
                ("Body".to_owned(), "a b".to_owned()),
                ("flag".to_owned(), String::new()),
                ("x".to_owned(), "%zz".to_owned()),
            ]
        );
    }
}
