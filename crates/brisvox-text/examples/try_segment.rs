//! Prints the chunks of each argument (English rules, one delta per char).
fn main() {
    use brisvox_text::segment::{Segmenter, SegmenterConfig};
    for text in std::env::args().skip(1) {
        let mut s = Segmenter::new(SegmenterConfig::default());
        let mut out = Vec::new();
        for c in text.chars() {
            s.push_into(&c.to_string(), &mut out);
        }
        out.extend(s.finish());
        println!("{out:?}");
    }
}
