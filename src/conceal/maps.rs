//! The maps from a view back to the text: what a hit in a view conceals.
//!
//! A view of the text is the text decoded, and a view of a view decodes it
//! once more, so a hit found in any of them has to be walked back through
//! every layer to the bytes it came from. Each layer only says how its own
//! bytes map to the bytes it was made from ([`SourceMap`]); [`Nested`]
//! composes two, so the scan never needs to know how deep a view is.

/// Maps a byte range of a view back to the source text.
pub(super) trait SourceMap {
    /// `None` only if the view is inconsistent, which the caller treats as
    /// "conceal everything".
    fn source(&self, start: usize, end: usize) -> Option<(usize, usize)>;

    /// Whether the range is a copy of contiguous text, no escape decoded in
    /// it: the scan of the text itself finds whatever lies there, so a view
    /// need not record it again (in text full of the token, most hits of
    /// every view are such copies).
    fn copied(&self, start: usize, end: usize) -> bool;
}

/// The text itself, from this many bytes in.
pub(super) struct Raw(pub(super) usize);

impl SourceMap for Raw {
    fn source(&self, start: usize, end: usize) -> Option<(usize, usize)> {
        Some((start + self.0, end + self.0))
    }

    /// The text's own hits are the ones that must be recorded.
    fn copied(&self, _: usize, _: usize) -> bool {
        false
    }
}

/// A view of a view (or of a view of a view): maps through both.
pub(super) struct Nested<'v> {
    pub(super) outer: &'v dyn SourceMap,
    pub(super) inner: &'v dyn SourceMap,
}

impl SourceMap for Nested<'_> {
    fn source(&self, start: usize, end: usize) -> Option<(usize, usize)> {
        let (start, end) = self.inner.source(start, end)?;
        self.outer.source(start, end)
    }

    fn copied(&self, start: usize, end: usize) -> bool {
        self.inner.copied(start, end)
            && self
                .inner
                .source(start, end)
                .is_some_and(|(a, b)| self.outer.copied(a, b))
    }
}

/// A window of the text that starts this many bytes in: the text itself,
/// already searched, so a view of it records only what it decoded.
pub(super) struct Window(pub(super) usize);

impl SourceMap for Window {
    fn source(&self, start: usize, end: usize) -> Option<(usize, usize)> {
        Some((start + self.0, end + self.0))
    }

    fn copied(&self, _: usize, _: usize) -> bool {
        true
    }
}
