extension Substring {
    /// The text without the optional whitespace around a header value or list element
    /// (RFC 9110 §5.6.3: spaces and tabs).
    public func trimmingSpaces() -> Substring {
        var text = self
        while text.first == " " || text.first == "\t" { text.removeFirst() }
        while text.last == " " || text.last == "\t" { text.removeLast() }
        return text
    }
}
