import LookoutHTTP
import LookoutTestSupport
import Testing

/// The text helpers that take a faster path over the bytes of ASCII text give what the
/// standard library gives by `Character`, for any text.
@Suite("Splitting, trimming and comparing text")
struct SubstringTests {
    /// Pieces that matter: separators, spaces, "\r\n" (one Character), a combining mark that
    /// joins the character before it, a prepended mark that joins the one after it, and
    /// other non-ASCII text.
    static let pieces = [
        "/", "&", "=", " ", "\t", ";", "a", "Bc", "@", "JSON", "\r\n", "\r", "\u{301}", "\u{600}", "é", "K", "\u{212A}",
    ]

    static func randomText(_ random: inout SplitMix64) -> Substring {
        (0..<random.below(8)).map { _ in pieces[random.below(pieces.count)] }.joined()[...]
    }

    @Test("splitting at ASCII separators gives the standard library's split by Character")
    func splittingAsSplit() {
        var random = SplitMix64(seed: 31)
        let choices: [[Unicode.Scalar]] = [["/"], ["&"], ["="], [" ", "\t"]]
        for _ in 0..<20_000 {
            let text = Self.randomText(&random)
            let separators = choices[random.below(choices.count)]
            let maxSplits = [0, 1, 2, .max][random.below(4)]
            let omitting = random.below(2) == 0
            let characters = separators.map(Character.init)
            let expected = text.split(
                maxSplits: maxSplits, omittingEmptySubsequences: omitting, whereSeparator: characters.contains)
            let pieces: [Substring] =
                separators.count == 1
                ? text.splitting(at: separators[0], maxSplits: maxSplits, omittingEmptySubsequences: omitting)
                : text.splitting(
                    at: separators[0], separators[1], maxSplits: maxSplits, omittingEmptySubsequences: omitting)
            #expect(
                pieces == expected, "\(text.debugDescription) at \(separators) max \(maxSplits) omitting \(omitting)")
        }
    }

    @Test("splitting once gives the standard library's split by Character at most once, empty pieces kept")
    func splittingOnceAsSplit() {
        var random = SplitMix64(seed: 41)
        var found = 0
        for _ in 0..<20_000 {
            let text = Self.randomText(&random)
            let separator: Unicode.Scalar = ["=", "/", ";"][random.below(3)]
            let expected = text.split(maxSplits: 1, omittingEmptySubsequences: false) { $0 == Character(separator) }
            let (head, rest) = text.splittingOnce(at: separator)
            #expect(head == expected[0], "\(text.debugDescription) at \(separator)")
            #expect(rest == (expected.count > 1 ? expected[1] : nil), "\(text.debugDescription) at \(separator)")
            if rest != nil { found += 1 }
        }
        #expect(found > 2_000, "enough texts with the separator")
    }

    @Test("trimming spaces and tabs, and comparing lowercased, agree with doing it by Character")
    func trimmingAndLowercase() {
        var random = SplitMix64(seed: 37)
        var trimmed = 0
        for _ in 0..<20_000 {
            let text = Self.randomText(&random)
            var expected = text
            while expected.first == " " || expected.first == "\t" { expected.removeFirst() }
            while expected.last == " " || expected.last == "\t" { expected.removeLast() }
            #expect(text.trimmingSpaces() == expected, "\(text.debugDescription)")
            if expected != text { trimmed += 1 }
            for word in ["bc", "json", "abc", "k", "a/bc", "`bc"] as [StaticString] {
                #expect(
                    text.isLowercased(as: word) == (text.lowercased() == word.description),
                    "\(text.debugDescription) \(word)")
            }
        }
        #expect(trimmed > 2_000, "enough texts with spaces to trim")
        #expect(Substring("Application/JSON").isLowercased(as: "application/json"))
        #expect(!Substring("application/jsoN ").isLowercased(as: "application/json"))
    }
}
