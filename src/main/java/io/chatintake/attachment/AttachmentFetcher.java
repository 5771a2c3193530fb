package io.chatintake.attachment;

import io.chatintake.attachment.AttachmentStore.Attachment;
import io.chatintake.attachment.AttachmentStore.Outcome;
import io.chatintake.config.Secret;
import io.chatintake.config.Settings;
import io.chatintake.support.MeterRegistryLookup;
import io.chatintake.work.TraceContext;
import io.chatintake.work.WorkDispatcher;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;
import org.apache.camel.Exchange;
import org.apache.camel.Handler;
import org.apache.hc.client5.http.classic.methods.HttpGet;
import org.apache.hc.client5.http.config.ConnectionConfig;
import org.apache.hc.client5.http.config.RequestConfig;
import org.apache.hc.client5.http.impl.classic.CloseableHttpClient;
import org.apache.hc.client5.http.impl.classic.HttpClients;
import org.apache.hc.client5.http.impl.io.PoolingHttpClientConnectionManagerBuilder;
import org.apache.hc.core5.http.ClassicHttpResponse;
import org.apache.hc.core5.http.Header;
import org.apache.hc.core5.http.HttpEntity;
import org.apache.hc.core5.util.Timeout;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Downloads one attachment per work item into the {@link MediaStore} and records how it ended.
 * Called by {@code routes/attachments.yaml} for items of kind {@code attachment}, as soon as the
 * child is stored: never held until its album is complete.
 * <p>
 * Expired (403/404/410), too large and other permanent answers are recorded and the item is done
 * (an expired Telegram file link is renewed through getFile first);
 * 5xx, 429 and network errors throw, so the dispatcher retries with backoff; the last attempt
 * records {@code failed} (and the dispatcher parks the item, where {@code work retry} finds it).
 * A URL the {@link FetchGuard} refuses (a scheme other than https, a private address, also after
 * a redirect) or cannot parse is {@code failed} at once, without a request.
 * Signed URLs and Telegram download URLs hold secrets: no log line or error message names them.
 */
public final class AttachmentFetcher {
    private static final Logger LOG = LoggerFactory.getLogger(AttachmentFetcher.class);
    static final String METRIC = "chat_intake_attachment_downloads";
    private static final Set<Integer> EXPIRED = Set.of(403, 404, 410);
    private static final Set<Integer> REDIRECTS = Set.of(301, 302, 303, 307, 308);
    private static final int MAX_REDIRECTS = 5;
    // One timer thread for every download deadline; daemon, so it never holds the JVM.
    private static final ScheduledExecutorService DEADLINES = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "attachment-download-deadline");
        t.setDaemon(true);
        return t;
    });

    public record Options(MediaStore media, long maxBytes, int maxConcurrentDownloads, Duration downloadTimeout, int maxAttempts,
                          FetchGuard guard) {
        /**
         * Opens the media store {@code media.store} names (an S3 bucket is checked here, at start).
         * @param maxAttempts the dispatcher's {@code work.max-attempts}: the attempt that records {@code failed}
         */
        public static Options from(Settings settings, int maxAttempts) {
            Duration downloadTimeout = MediaStore.downloadTimeout(settings);
            return new Options(MediaStore.configured(settings),
                    settings.getLong("attachments.max-bytes"),
                    settings.getInt("attachments.max-concurrent-downloads"),
                    downloadTimeout,
                    maxAttempts,
                    FetchGuard.from(settings));
        }
    }

    /** A download worth another attempt; its message never holds the URL. */
    static final class RetryableDownloadException extends Exception {
        RetryableDownloadException(String message) {
            super(message);
        }
    }

    /** The outcome as recorded, and as counted (stored content seen before counts as duplicate_content). */
    private record Fetched(Outcome outcome, String metric) {
        static Fetched of(String status, String error) {
            return new Fetched(Outcome.of(status, error), status);
        }
    }

    private final AttachmentStore store;
    private final MediaStore media;
    private final Options options;
    private final FileSource telegramFiles;
    private final Semaphore downloads;
    private final CloseableHttpClient http;
    private volatile MeterRegistry meters;

    /** @param telegramFiles where attachments known by a Telegram file id come from */
    public AttachmentFetcher(DataSource dataSource, Options options, FileSource telegramFiles) {
        this.store = new AttachmentStore(dataSource);
        this.media = options.media();
        this.options = options;
        this.telegramFiles = telegramFiles;
        // The dispatcher's work.concurrency bounds handlers of every kind; this bounds downloads alone.
        this.downloads = new Semaphore(options.maxConcurrentDownloads());
        // Redirects are followed here, not by the client, so each target passes the guard's checks.
        Timeout timeout = Timeout.of(options.downloadTimeout());
        this.http = HttpClients.custom()
                .setConnectionManager(PoolingHttpClientConnectionManagerBuilder.create()
                        .setDnsResolver(options.guard())
                        .setDefaultConnectionConfig(ConnectionConfig.custom().setConnectTimeout(Timeout.ofSeconds(10))
                                .setSocketTimeout(timeout).build())
                        .setMaxConnTotal(options.maxConcurrentDownloads()).setMaxConnPerRoute(options.maxConcurrentDownloads())
                        .build())
                .setDefaultRequestConfig(RequestConfig.custom().setResponseTimeout(timeout).build())
                .disableRedirectHandling().disableAutomaticRetries().disableCookieManagement().disableAuthCaching()
                .build();
        LOG.info("attachments: files kept in {}", media.description());
    }

    @Handler
    public void fetch(Exchange exchange) throws Exception {
        Attachment attachment = exchange.getMessage().getMandatoryBody(Attachment.class);
        if (!"pending".equals(attachment.status()) && !"failed".equals(attachment.status())) {
            return; // decided already: a replayed item changes nothing
        }
        int attempt = exchange.getMessage().getHeader(WorkDispatcher.WORK_ATTEMPT, 1, Integer.class);
        Fetched fetched;
        // The span says where from (Telegram or a URL) and how it ended: never the URL, which may be signed.
        TraceContext.Call span = TraceContext.call("attachment download", "chat_intake.attachment.source",
                attachment.telegram() ? "telegram" : "url");
        try {
            fetched = download(attachment);
            span.end(fetched.outcome().status(), null);
        } catch (RetryableDownloadException e) {
            span.end("retried", null);
            if (attempt >= options.maxAttempts()) {
                store.record(attachment, Outcome.of("failed", e.getMessage()));
                count(exchange, attachment, "failed");
                LOG.warn("attachment {}: failed after {} attempts: {}", attachment.id(), attempt, e.getMessage());
            } else {
                store.attemptFailed(attachment, e.getMessage());
                count(exchange, attachment, "retry");
            }
            throw e;
        }
        store.record(attachment, fetched.outcome());
        count(exchange, attachment, fetched.metric());
        Outcome outcome = fetched.outcome();
        if ("stored".equals(outcome.status())) {
            LOG.info("attachment {}: stored {} bytes as {}{}", attachment.id(), outcome.sizeBytes(), outcome.mediaPath(),
                    "duplicate_content".equals(fetched.metric()) ? " (content already stored)" : "");
        } else {
            LOG.info("attachment {}: {} ({})", attachment.id(), outcome.status(), outcome.error());
        }
    }

    private Fetched download(Attachment attachment) throws RetryableDownloadException, InterruptedException, SQLException {
        if (attachment.declaredSize() != null && attachment.declaredSize() > options.maxBytes()) {
            return tooLarge("declared " + attachment.declaredSize() + " bytes");
        }
        downloads.acquire();
        try {
            return attachment.telegram() ? fromTelegram(attachment) : fromUrl(attachment);
        } finally {
            downloads.release();
        }
    }

    private Fetched fromUrl(Attachment attachment) throws RetryableDownloadException {
        URI uri;
        try {
            uri = options.guard().check(attachment.url().reveal());
        } catch (FetchGuard.RefusedException e) {
            return Fetched.of("failed", e.getMessage());
        }
        for (int redirects = 0; ; redirects++) {
            HttpGet get = new HttpGet(uri);
            ClassicHttpResponse response;
            try {
                response = http.executeOpen(null, get, null);
            } catch (IOException e) {
                FetchGuard.RefusedException refused = FetchGuard.refusal(e);
                if (refused != null) {
                    return Fetched.of("failed", refused.getMessage() + (redirects > 0 ? " (after a redirect)" : ""));
                }
                throw new RetryableDownloadException(describe(e, attachment.url()));
            }
            // Closing the response alone would read the rest of its body first, however large: the connection is dropped.
            Closeable drop = () -> {
                get.cancel();
                response.close();
            };
            int status = response.getCode();
            if (status != 200) {
                quietly(drop);
            }
            if (REDIRECTS.contains(status)) {
                Header location = response.getFirstHeader("Location");
                if (location == null || redirects == MAX_REDIRECTS) {
                    return Fetched.of("failed", "answered " + status + (location == null ? " without a Location" : " once more after "
                            + MAX_REDIRECTS + " redirects"));
                }
                try {
                    uri = options.guard().check(uri.resolve(location.getValue()).toString());
                } catch (FetchGuard.RefusedException e) {
                    return Fetched.of("failed", e.getMessage() + " (after a redirect)");
                } catch (IllegalArgumentException e) {
                    return Fetched.of("failed", "answered " + status + " with a Location that is not a valid URI");
                }
                continue;
            }
            if (EXPIRED.contains(status)) {
                return Fetched.of("expired", "answered " + status);
            }
            if (status >= 500 || status == 429 || status == 408) {
                throw new RetryableDownloadException("answered " + status);
            }
            if (status != 200) {
                return Fetched.of("failed", "answered " + status);
            }
            Header type = response.getFirstHeader("Content-Type");
            HttpEntity entity = response.getEntity();
            try {
                InputStream body = entity == null ? InputStream.nullInputStream() : entity.getContent();
                return save(body, drop, type == null ? attachment.declaredType() : type.getValue(), attachment.url());
            } catch (IOException e) {
                quietly(drop);
                throw new RetryableDownloadException(describe(e, attachment.url()));
            }
        }
    }

    private static void quietly(Closeable connection) {
        try {
            connection.close();
        } catch (IOException e) {
            // The connection is discarded either way; nothing was read from it that matters.
        }
    }

    private Fetched fromTelegram(Attachment attachment) throws RetryableDownloadException {
        String botName = attachment.telegramBotName();
        if (botName == null) {
            throw new RetryableDownloadException("bot " + attachment.telegramBotId() + " has never polled here (no telegram_checkpoint row)");
        }
        try {
            InputStream body = telegramFiles.open(botName, attachment.telegramFileId(), options.maxBytes(), options.downloadTimeout());
            return save(body, body, attachment.declaredType(), null);
        } catch (FileSource.TooLargeException e) {
            return tooLarge(e.getMessage());
        } catch (FileSource.UnavailableException e) {
            return Fetched.of("failed", e.getMessage());
        } catch (IOException e) {
            throw new RetryableDownloadException(e.getMessage());
        }
    }

    /**
     * Streams the body into the media store; the whole download must end within the timeout.
     * @param connection closed when time is up, and at the end
     */
    private Fetched save(InputStream body, Closeable connection, String contentType, Secret url) throws RetryableDownloadException {
        Deadline deadline = new Deadline(connection, options.downloadTimeout());
        try (InputStream in = body; Closeable c = connection; deadline) {
            MediaStore.StoredFile file = media.save(in, options.maxBytes());
            return new Fetched(Outcome.stored(file.sha256(), file.size(), contentType, file.relativePath()),
                    file.duplicate() ? "duplicate_content" : "stored");
        } catch (MediaStore.TooLargeException e) {
            return tooLarge(e.getMessage());
        } catch (IOException e) {
            throw new RetryableDownloadException(deadline.passed()
                    ? "not complete within " + options.downloadTimeout().toSeconds() + " s" : describe(e, url));
        }
    }

    private static Fetched tooLarge(String why) {
        return Fetched.of("too_large", why);
    }

    private static String describe(IOException e, Secret url) {
        String text = e.getClass().getSimpleName() + (e.getMessage() == null ? "" : ": " + e.getMessage());
        return url == null ? text : text.replace(url.reveal(), "[url]");
    }

    private void count(Exchange exchange, Attachment attachment, String outcome) {
        MeterRegistry registry = meters;
        if (registry == null) {
            // Looked up lazily: camel-micrometer binds its registry while the context starts, after beans exist.
            registry = MeterRegistryLookup.of(exchange.getContext());
            meters = registry;
        }
        Counter.builder(METRIC).description("Attachment downloads by outcome")
                .tags("source", attachment.source(), "outcome", outcome).register(registry).increment();
    }

    /**
     * Closes the response when time is up: a read blocked on a server that stopped sending
     * then fails at once (an interrupt would not end it), and the attempt is retried.
     */
    private static final class Deadline implements AutoCloseable {
        private final AtomicBoolean passed = new AtomicBoolean();
        private final ScheduledFuture<?> timer;

        Deadline(Closeable connection, Duration timeout) {
            timer = DEADLINES.schedule(() -> {
                passed.set(true);
                try {
                    connection.close();
                } catch (IOException e) {
                    // Closing is all that was asked; the reader sees the stream closed either way.
                }
            }, timeout.toMillis(), TimeUnit.MILLISECONDS);
        }

        boolean passed() {
            return passed.get();
        }

        @Override
        public void close() {
            timer.cancel(false);
        }
    }
}
