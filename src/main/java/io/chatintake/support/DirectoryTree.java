package io.chatintake.support;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/** Removing a scratch directory (a demo's, a chaos run's, a test's) with everything in it. */
public final class DirectoryTree {
    private DirectoryTree() {
    }

    /**
     * Deletes the directory and all it holds, deepest first; a missing one is nothing to do. Goes
     * on past what cannot be deleted, then names the first such path.
     */
    public static void delete(Path root) throws IOException {
        if (!Files.exists(root)) {
            return;
        }
        List<Path> paths;
        try (Stream<Path> files = Files.walk(root)) {
            paths = files.sorted(Comparator.reverseOrder()).toList();
        }
        IOException first = null;
        for (Path path : paths) {
            try {
                Files.deleteIfExists(path);
            } catch (IOException e) {
                first = first == null ? e : first;
            }
        }
        if (first != null) {
            throw first;
        }
    }
}
