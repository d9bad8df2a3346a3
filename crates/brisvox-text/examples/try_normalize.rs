//! Prints the normalised form of each argument line (English and Turkish).
fn main() {
    use brisvox_text::{Language, normalize::normalize};
    for line in std::env::args().skip(1) {
        println!(
            "EN {:?}\nTR {:?}",
            normalize(&line, Language::En),
            normalize(&line, Language::Tr)
        );
    }
}
