package org.tidelake.oracle;

import okhttp3.mockwebserver.Dispatcher;
import okhttp3.mockwebserver.MockResponse;
import okhttp3.mockwebserver.MockWebServer;
import okhttp3.mockwebserver.RecordedRequest;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.FileSystemCatalog;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.fs.FileIO;
import org.apache.paimon.fs.Path;
import org.apache.paimon.options.Options;
import org.apache.paimon.rest.RESTCatalogServer;
import org.apache.paimon.rest.RESTToken;
import org.apache.paimon.rest.auth.BearTokenAuthProvider;
import org.apache.paimon.rest.responses.ConfigResponse;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.Field;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.HashMap;
import java.util.Map;

/**
 * Paimon 1.3.1's own REST catalog server ({@code RESTCatalogServer} from the paimon-core test
 * jar) on 127.0.0.1, for the REST catalog tests: {@code RestServer DATA_DIR WAREHOUSE TOKEN
 * [KEY=VALUE ...]} serves the warehouse named WAREHOUSE (its files in DATA_DIR, a local
 * directory or an {@code s3://} URL every client writes to as well), with bearer token TOKEN,
 * the path prefix {@code paimon} and each KEY=VALUE among the options it gives clients, except
 * keys starting with {@code server.}: those (without the prefix) configure only the server's
 * own file system of an {@code s3://} DATA_DIR (its credentials, which clients then never see).
 * It prints {@code READY <url>}, then reads commands from its standard input until it closes:
 * {@code data-token DB.TABLE VALID_MS KEY=VALUE ...} makes the server vend that data token for
 * the table from now on, valid for VALID_MS milliseconds ({@code RESTCatalogServer.setDataToken},
 * answered by {@code DATA-TOKEN SET}); every token request served prints {@code SERVED-TOKEN
 * <path>}, every partitions-done request {@code SERVED-MARK <status> <body> <path>}.
 *
 * <p>The test server always keeps its tables on a local file system; for an {@code s3://}
 * DATA_DIR its file-system catalog is replaced by one over Paimon's S3 file system.
 *
 * <p>The server keeps databases, tables and latest snapshots in plain hash maps and
 * MockWebServer gives each connection a thread, so requests are served one at a time here (a
 * synchronized dispatcher): the server then arbitrates concurrent commits as a real one does.
 * Its state lives in memory only: one server per fresh DATA_DIR.
 */
public final class RestServer {
    private RestServer() {}

    public static void main(String[] args) throws Exception {
        String dataDir = args[0];
        String warehouse = args[1];
        String token = args[2];
        Map<String, String> defaults = new HashMap<>();
        Map<String, String> own = new HashMap<>();
        defaults.put("prefix", "paimon");
        defaults.put("warehouse", warehouse);
        for (int i = 3; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            if (kv[0].startsWith("server.")) {
                own.put(kv[0].substring("server.".length()), kv[1]);
            } else {
                defaults.put(kv[0], kv[1]);
            }
        }
        boolean remote = dataDir.contains("://");
        RESTCatalogServer server =
                new RESTCatalogServer(
                        remote ? Files.createTempDirectory("rest-server").toString() : dataDir,
                        new BearTokenAuthProvider(token),
                        new ConfigResponse(defaults, new HashMap<>()),
                        warehouse);
        if (remote) {
            Options options = new Options(defaults);
            own.forEach(options::setString);
            options.setString("warehouse", dataDir);
            CatalogContext context = CatalogContext.create(options);
            Path root = new Path(dataDir);
            FileSystemCatalog catalog =
                    new FileSystemCatalog(FileIO.get(root, context), root, context.options());
            set(server, "catalog", catalog);
        }
        MockWebServer web = (MockWebServer) get(server, "server");
        Dispatcher inner = web.getDispatcher();
        web.setDispatcher(
                new Dispatcher() {
                    @Override
                    public synchronized MockResponse dispatch(RecordedRequest request)
                            throws InterruptedException {
                        // read before the server consumes it
                        String body = request.getBody().clone().readUtf8();
                        MockResponse answer = inner.dispatch(request);
                        String path = request.getPath();
                        if (path != null && path.endsWith("/token")) {
                            System.out.println("SERVED-TOKEN " + path);
                            System.out.flush();
                        } else if (path != null && path.endsWith("/partitions/mark")) {
                            String status = answer.getStatus().split(" ")[1];
                            System.out.println("SERVED-MARK " + status + " " + body + " " + path);
                            System.out.flush();
                        }
                        return answer;
                    }
                });
        web.start(InetAddress.getByName("127.0.0.1"), 0);
        System.out.println("READY http://127.0.0.1:" + web.getPort());
        System.out.flush();
        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] words = line.trim().split(" ");
            if (words[0].equals("data-token")) {
                Map<String, String> vended = new HashMap<>();
                for (int i = 3; i < words.length; i++) {
                    String[] kv = words[i].split("=", 2);
                    vended.put(kv[0], kv[1]);
                }
                long expires = System.currentTimeMillis() + Long.parseLong(words[2]);
                synchronized (web.getDispatcher()) {
                    server.setDataToken(Identifier.fromString(words[1]), new RESTToken(vended, expires));
                }
                System.out.println("DATA-TOKEN SET");
                System.out.flush();
            }
        }
        web.shutdown();
    }

    private static Object get(Object owner, String name) throws ReflectiveOperationException {
        Field field = RESTCatalogServer.class.getDeclaredField(name);
        field.setAccessible(true);
        return field.get(owner);
    }

    private static void set(Object owner, String name, Object value)
            throws ReflectiveOperationException {
        Field field = RESTCatalogServer.class.getDeclaredField(name);
        field.setAccessible(true);
        field.set(owner, value);
    }
}
