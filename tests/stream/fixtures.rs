//! Every calls fixture through the stream: whole, a byte at a time, at every boundary, split at random
//! (a byte at a time and at random with an `arguments` event due at every byte, the rest with the
//! default step).

use super::*;

#[test]
fn fixtures_whole_and_byte_by_byte() {
    for case in calls_cases() {
        let expected = extract(&case.input, &case.options);
        check(
            &case,
            "whole",
            &run(&case.options, &[&case.input]),
            &expected,
        );
        let bounds = boundaries(&case.input);
        let chars: Vec<&str> = bounds.windows(2).map(|w| &case.input[w[0]..w[1]]).collect();
        check(
            &case,
            "one character at a time",
            &run_with_step(&case.options, 1, &chars),
            &expected,
        );
    }
}

#[test]
fn fixtures_split_at_every_boundary() {
    for case in calls_cases() {
        let expected = extract(&case.input, &case.options);
        for &cut in &boundaries(&case.input) {
            let chunks = split_at(&case.input, &[cut]);
            check(
                &case,
                &format!("split at {cut}"),
                &run(&case.options, &chunks),
                &expected,
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn fixtures_split_at_random_points(seeds in prop::collection::vec(any::<prop::sample::Index>(), 1..12)) {
        for case in calls_cases() {
            let bounds = boundaries(&case.input);
            let mut cuts: Vec<usize> = seeds.iter().map(|s| bounds[s.index(bounds.len())]).collect();
            cuts.sort_unstable();
            let chunks = split_at(&case.input, &cuts);
            let expected = extract(&case.input, &case.options);
            check(&case, &format!("split at {cuts:?}"), &run_with_step(&case.options, 1, &chunks), &expected);
        }
    }
}
