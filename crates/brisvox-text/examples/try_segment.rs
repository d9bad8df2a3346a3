//! Prints the chunks of each argument (one delta per char); Turkish rules
//! when the environment variable `SEGMENT_TR` is set.
fn main() {
    use brisvox_text::Language;
    use brisvox_text::segment::{Segmenter, SegmenterConfig};
    let language = if std::env::var_os("SEGMENT_TR").is_some() {
        Language::Tr
    } else {
        Language::En
    };
    for text in std::env::args().skip(1) {
        let mut s = Segmenter::new(SegmenterConfig::new(language));
        let mut out = Vec::new();
        for c in text.chars() {
            s.push_into(&c.to_string(), &mut out);
        }
        out.extend(s.finish());
        println!("{out:?}");
    }
}
