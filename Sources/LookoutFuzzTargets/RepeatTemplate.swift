/// A fuzz input with one region marked for repetition, so that a small input stands for
/// a large one.
///
/// libFuzzer keeps inputs small (4 KiB by default) and rewards coverage, not time, so a
/// parser that is quadratic in the number of keys, parameters or list items looks fast
/// to it. Each target therefore also runs the expansion of a marked input, as large as a
/// client may send to that parser, under libFuzzer's `-timeout`.
///
/// The region runs from the first byte 0x01 to the next 0x02 (both removed). Each copy
/// of it has every 0x03 replaced by the copy's number, 0, 1, 2, ..., so that repeated
/// keys or names can be distinct:
///
/// ```
/// {\x01"k\x03":1,\x02"z":0}   expands to   {"k0":1,"k1":1,"k2":1,...,"z":0}
/// ```
struct RepeatTemplate {
    static let start: UInt8 = 0x01
    static let end: UInt8 = 0x02
    static let counter: UInt8 = 0x03

    private let prefix: ArraySlice<UInt8>
    private let region: ArraySlice<UInt8>
    private let suffix: ArraySlice<UInt8>

    /// The template in `input`; nil when it marks no region.
    init?(_ input: [UInt8]) {
        guard let start = input.firstIndex(of: Self.start),
            let end = input[(start + 1)...].firstIndex(of: Self.end)
        else { return nil }
        prefix = input[..<start]
        region = input[(start + 1)..<end]
        suffix = input[(end + 1)...]
    }

    /// The input with the region repeated as often as fits in `size` bytes, and at least once.
    func expanded(fillingUpTo size: Int) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(max(size, prefix.count + region.count + suffix.count + 8))
        output.append(contentsOf: prefix)
        let budget = size - suffix.count
        var copy: [UInt8] = []
        var index = 0
        repeat {
            copy.removeAll(keepingCapacity: true)
            let number = Array(String(index).utf8)
            for byte in region {
                if byte == Self.counter { copy.append(contentsOf: number) } else { copy.append(byte) }
            }
            // An empty region repeats to nothing however often it is copied.
            if copy.isEmpty || (index > 0 && output.count + copy.count > budget) { break }
            output.append(contentsOf: copy)
            index += 1
        } while true
        output.append(contentsOf: suffix)
        return output
    }
}
