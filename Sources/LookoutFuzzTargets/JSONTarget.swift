import LookoutJSON

/// The JSON parser and writer. What the parser accepts, the writer writes back as text
/// that parses to an equal value (integers stay integers, member order stays) and that
/// writes back byte for byte, so strings keep their exact scalars; what it refuses, it
/// refuses with a ``JSONParseError`` at an offset within the input.
enum JSONTarget {
    static func check(_ input: [UInt8]) throws(PropertyViolation) {
        _ = try parse(input)
    }

    /// Checks the parser on `input` and returns its value; nil when it refused it.
    static func parse(_ input: [UInt8]) throws(PropertyViolation) -> JSONValue? {
        let value: JSONValue
        do {
            value = try JSONParser.parse(input)
        } catch {
            try PropertyViolation.require(
                (0...input.count).contains(error.offset),
                "the error \(error) points outside the \(input.count) bytes of input")
            return nil
        }
        let written = JSONWriter.encode(value)
        let reread: JSONValue
        do {
            reread = try JSONParser.parse(written)
        } catch {
            throw PropertyViolation(
                "the writer's output is refused (\(error)): \(excerpt(String(decoding: written, as: UTF8.self)))")
        }
        try PropertyViolation.require(
            reread == value,
            "the written value parses to another value: \(excerpt(String(decoding: written, as: UTF8.self)))")
        try PropertyViolation.require(
            JSONWriter.encode(reread) == written, "writing the written value again gives other bytes")
        return value
    }
}
