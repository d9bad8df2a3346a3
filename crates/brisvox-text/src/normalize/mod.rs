//! Text normaliser (placeholder while the segmenter lands).
