package io.chatintake.attachment;

import io.chatintake.config.ConfigurationException;
import io.chatintake.config.Settings;
import io.chatintake.store.Database;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;

/**
 * Where downloaded files are kept, content-addressed: a file's key is {@code <first 2 hex>/<sha256>}
 * of its bytes, so the same content is kept once however many attachments carry it, and a key
 * always names complete content. Two backends: {@link LocalMediaStore} (a directory, one machine)
 * and {@link S3MediaStore} (S3-compatible object storage every replica shares), chosen by
 * {@code media.store}.
 */
public interface MediaStore extends AutoCloseable {
    String STORE = "media.store";

    /** The stored file; {@code duplicate} when that content was stored already. */
    record StoredFile(String sha256, long size, String relativePath, boolean duplicate) {
    }

    /** More bytes than the cap: nothing is kept. */
    final class TooLargeException extends Exception {
        TooLargeException(long maxBytes) {
            super("larger than " + maxBytes + " bytes");
        }
    }

    /** Reads the whole stream (at most {@code maxBytes}) and keeps it under its content key. */
    StoredFile save(InputStream in, long maxBytes) throws IOException, TooLargeException;

    /** The content stored under a key of {@link StoredFile#relativePath()}; the caller closes it. */
    InputStream open(String relativePath) throws IOException;

    /** Removes the content stored under a key (erasure, content expiry); a key already gone is no error. */
    void delete(String relativePath) throws IOException;

    /** Where files go, for the start line: no credential in it. */
    String description();

    @Override
    void close();

    /** The store {@code media.store} names, under the data directory's {@code media}. */
    static MediaStore configured(Settings settings) {
        return configured(settings, Database.dataDir(settings).resolve("media"), downloadTimeout(settings));
    }

    /** The longest a download runs ({@code attachments.download-timeout-seconds}). */
    static Duration downloadTimeout(Settings settings) {
        return Duration.ofSeconds(settings.getLong("attachments.download-timeout-seconds"));
    }

    /**
     * The store {@code media.store} names. Downloads are spooled under {@code <mediaDir>/tmp}
     * whatever the backend (they must be hashed before their key is known); what killed processes
     * left there is removed now.
     * @param downloadTimeout the longest a download runs: younger parts may be in progress elsewhere
     */
    static MediaStore configured(Settings settings, Path mediaDir, Duration downloadTimeout) {
        String kind = settings.value(STORE).toLowerCase(Locale.ROOT);
        MediaSpool spool = new MediaSpool(mediaDir.resolve("tmp"));
        MediaStore store = switch (kind) {
            case "local" -> new LocalMediaStore(mediaDir, spool);
            case "s3" -> S3MediaStore.configured(settings, spool);
            default -> throw new ConfigurationException(Settings.envName(STORE) + " (" + STORE
                    + ") must be local or s3, got '" + kind + "'");
        };
        spool.removeLeftovers(downloadTimeout);
        return store;
    }
}
