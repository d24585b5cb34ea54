extension Array {
    /// The first `count` elements in the order `precedes` gives (all of them when there
    /// are fewer), sorted: what a page of a list needs, without sorting every element
    /// after the page. Takes O(n log count) comparisons rather than a full sort's O(n log n).
    /// - Precondition: `precedes` is a strict weak ordering; which of two equivalent
    ///   elements is kept is unspecified (list rows have none: ids break ties).
    func smallest(_ count: Int, by precedes: (Element, Element) -> Bool) -> [Element] {
        let kept = Swift.min(Swift.max(count, 0), self.count)
        guard kept > 0 else { return [] }
        // When most of it is wanted, sorting all of it is as quick.
        guard kept * 4 < self.count else { return Array(sorted(by: precedes).prefix(kept)) }
        // A max-heap of the smallest elements so far: its root is the largest of them, the
        // one a smaller element replaces.
        var heap = Array(self[..<kept])
        for parent in stride(from: kept / 2 - 1, through: 0, by: -1) {
            heap.siftDown(from: parent, by: precedes)
        }
        for element in self[kept...] where precedes(element, heap[0]) {
            heap[0] = element
            heap.siftDown(from: 0, by: precedes)
        }
        return heap.sorted(by: precedes)
    }

    /// Moves the element at `start` down a max-heap (by `precedes`) to its place.
    private mutating func siftDown(from start: Int, by precedes: (Element, Element) -> Bool) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < count else { return }
            let right = left + 1
            let larger = right < count && precedes(self[left], self[right]) ? right : left
            guard precedes(self[parent], self[larger]) else { return }
            swapAt(parent, larger)
            parent = larger
        }
    }
}
