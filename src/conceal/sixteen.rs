//! The bytes a view cares about (a trigger, `\`, `%` or `&`, or a raw line
//! break), found sixteen at a time: a leaf that both the reading of what a
//! text holds (`views.rs`) and the listing of where (`listed.rs`) use.

/// A bit for each of sixteen bytes that is a trigger or a raw break.
#[cfg(target_arch = "x86_64")]
pub(super) fn mask16(chunk: &[u8; 16]) -> u32 {
    use safe_arch::{
        bitor_m128i, cmp_eq_mask_i8_m128i, load_unaligned_m128i, move_mask_i8_m128i,
        set_splat_i8_m128i,
    };
    let bytes = load_unaligned_m128i(chunk);
    let [a, b, c, d, e] = [b'\\', b'%', b'&', b'\r', b'\n']
        .map(|byte| cmp_eq_mask_i8_m128i(bytes, set_splat_i8_m128i(i8::from_ne_bytes([byte]))));
    let found = bitor_m128i(bitor_m128i(a, b), bitor_m128i(bitor_m128i(c, d), e));
    move_mask_i8_m128i(found).cast_unsigned() & 0xFFFF
}

/// Whether `text` holds none of the bytes `Holds::of` looks for (a
/// trigger or a raw line break; an escaped break starts with a trigger),
/// read sixteen bytes at a time, the last sixteen overlapping the ones
/// before; `false` for a text shorter than that, which the table reads.
#[cfg(target_arch = "x86_64")]
pub(super) fn holds_none(text: &[u8]) -> bool {
    let Some(last) = text.len().checked_sub(16) else {
        return false;
    };
    let clear = |k: usize| {
        text.get(k..)
            .and_then(<[u8]>::first_chunk::<16>)
            .is_some_and(|chunk| mask16(chunk) == 0)
    };
    let mut k = 0;
    while k < last {
        if !clear(k) {
            return false;
        }
        k += 16;
    }
    clear(last)
}

/// Elsewhere the table reads every text.
#[cfg(not(target_arch = "x86_64"))]
pub(super) fn holds_none(_: &[u8]) -> bool {
    false
}
