package carrag.esharness;

import org.elasticsearch.ElasticsearchException;
import org.elasticsearch.action.DocWriteResponse;
import org.elasticsearch.action.bulk.BulkItemResponse;
import org.elasticsearch.action.bulk.BulkRequest;
import org.elasticsearch.action.bulk.BulkResponse;
import org.elasticsearch.action.delete.DeleteRequest;
import org.elasticsearch.action.search.ClearScrollRequest;
import org.elasticsearch.action.search.SearchRequest;
import org.elasticsearch.action.search.SearchResponse;
import org.elasticsearch.action.search.SearchScrollRequest;
import org.elasticsearch.client.internal.node.NodeClient;
import org.elasticsearch.common.Strings;
import org.elasticsearch.common.document.DocumentField;
import org.elasticsearch.core.TimeValue;
import org.elasticsearch.index.query.AbstractQueryBuilder;
import org.elasticsearch.index.query.QueryBuilder;
import org.elasticsearch.index.query.QueryBuilders;
import org.elasticsearch.rest.BaseRestHandler;
import org.elasticsearch.rest.RestRequest;
import org.elasticsearch.rest.RestResponse;
import org.elasticsearch.rest.RestStatus;
import org.elasticsearch.search.SearchHit;
import org.elasticsearch.search.builder.SearchSourceBuilder;
import org.elasticsearch.search.sort.SortOrder;
import org.elasticsearch.xcontent.ToXContent;
import org.elasticsearch.xcontent.XContentBuilder;
import org.elasticsearch.xcontent.XContentParser;

import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * A compact, synchronous {@code POST /{index}/_delete_by_query} for the harness.
 *
 * <p>The real implementation lives in the {@code reindex} module, which is not published to Maven Central for 8.x.
 * This one follows the documented semantics for the common case: it scrolls over a snapshot of the
 * <em>currently searchable</em> documents matching {@code query} (so un-refreshed writes are not seen, as in
 * Elasticsearch) and deletes them in bulk with {@code if_seq_no}/{@code if_primary_term}, so concurrent changes are
 * reported as {@code version_conflicts}. {@code conflicts=abort} (default) stops at the first conflict with HTTP 409;
 * {@code conflicts=proceed} counts and continues. Supported: body {@code query}, {@code max_docs}, {@code conflicts};
 * URL parameters {@code refresh}, {@code conflicts}, {@code max_docs}, {@code scroll_size}, {@code scroll},
 * {@code routing}, {@code slices} (accepted; always one slice), {@code wait_for_completion=true}.
 * Any other parameter is rejected with HTTP 400 rather than silently ignored. The response has the same fields as
 * Elasticsearch's ({@code took, timed_out, total, deleted, batches, version_conflicts, noops, retries, ...,
 * failures}).
 */
final class RestDeleteByQueryAction extends BaseRestHandler {

    private static final TimeValue DEFAULT_SCROLL = TimeValue.timeValueMinutes(5);

    @Override
    public String getName() {
        return "carrag_harness_delete_by_query";
    }

    @Override
    public List<Route> routes() {
        return List.of(new Route(RestRequest.Method.POST, "/{index}/_delete_by_query"));
    }

    @Override
    protected RestChannelConsumer prepareRequest(RestRequest request, NodeClient client) throws IOException {
        final String[] indices = Strings.splitStringByCommaToArray(request.param("index"));
        final boolean refresh = request.paramAsBoolean("refresh", false);
        final int scrollSize = request.paramAsInt("scroll_size", 1000);
        final TimeValue scroll = request.paramAsTime("scroll", DEFAULT_SCROLL);
        final String routing = request.param("routing");
        request.param("slices"); // accepted for compatibility; one slice is plenty for a single-shard test index
        if (request.paramAsBoolean("wait_for_completion", true) == false) {
            throw new IllegalArgumentException("carrag es harness: _delete_by_query supports only wait_for_completion=true");
        }
        int maxDocs = request.paramAsInt("max_docs", -1);
        String conflicts = request.param("conflicts", "abort");

        QueryBuilder query = QueryBuilders.matchAllQuery();
        if (request.hasContentOrSourceParam()) {
            try (XContentParser parser = request.contentOrSourceParamParser()) {
                XContentParser.Token token = parser.nextToken();
                if (token != XContentParser.Token.START_OBJECT) {
                    throw new IllegalArgumentException("request body must be an object");
                }
                while ((token = parser.nextToken()) == XContentParser.Token.FIELD_NAME) {
                    String field = parser.currentName();
                    parser.nextToken();
                    switch (field) {
                        case "query" -> query = AbstractQueryBuilder.parseTopLevelQuery(parser);
                        case "max_docs", "size" -> maxDocs = parser.intValue();
                        case "conflicts" -> conflicts = parser.text();
                        default -> throw new IllegalArgumentException(
                            "carrag es harness: unsupported _delete_by_query body field [" + field + "]"
                        );
                    }
                }
            }
        }
        if (conflicts.equals("abort") == false && conflicts.equals("proceed") == false) {
            throw new IllegalArgumentException("conflicts may only be \"proceed\" or \"abort\" but was [" + conflicts + "]");
        }
        final boolean abortOnConflict = conflicts.equals("abort");
        final int limit = maxDocs;
        final QueryBuilder finalQuery = query;

        return channel -> client.threadPool().generic().execute(() -> {
            try {
                XContentBuilder body = channel.newBuilder();
                RestStatus status = run(client, indices, finalQuery, routing, scrollSize, scroll, limit, abortOnConflict, refresh, body);
                channel.sendResponse(new RestResponse(status, body));
            } catch (Exception e) {
                try {
                    channel.sendResponse(new RestResponse(channel, e));
                } catch (IOException inner) {
                    inner.addSuppressed(e);
                    throw new ElasticsearchException("failed to send _delete_by_query failure", inner);
                }
            }
        });
    }

    private static RestStatus run(
        NodeClient client,
        String[] indices,
        QueryBuilder query,
        String routing,
        int scrollSize,
        TimeValue scroll,
        int maxDocs,
        boolean abortOnConflict,
        boolean refresh,
        XContentBuilder out
    ) throws IOException {
        final long start = System.nanoTime();
        long total = 0, deleted = 0, batches = 0, conflicts = 0, processed = 0;
        boolean timedOut = false;
        List<BulkItemResponse.Failure> failures = new ArrayList<>();
        Set<String> touched = new LinkedHashSet<>();
        String scrollId = null;

        SearchRequest search = new SearchRequest(indices).routing(routing)
            .scroll(scroll)
            .source(
                new SearchSourceBuilder().query(query)
                    .size(maxDocs > 0 ? Math.min(scrollSize, maxDocs) : scrollSize)
                    .fetchSource(false)
                    .seqNoAndPrimaryTerm(true)
                    .trackTotalHits(true)
                    .sort("_doc", SortOrder.ASC)
            );
        SearchResponse response = client.search(search).actionGet();
        try {
            boolean first = true;
            outer: while (true) {
                scrollId = response.getScrollId();
                if (first) {
                    total = response.getHits().getTotalHits() == null ? 0 : response.getHits().getTotalHits().value;
                    if (maxDocs > 0) {
                        total = Math.min(total, maxDocs);
                    }
                    first = false;
                }
                timedOut |= response.isTimedOut();
                SearchHit[] hits = response.getHits().getHits();
                if (hits.length == 0) {
                    break;
                }
                BulkRequest bulk = new BulkRequest();
                for (SearchHit hit : hits) {
                    if (maxDocs > 0 && processed >= maxDocs) {
                        break;
                    }
                    processed++;
                    DeleteRequest delete = new DeleteRequest(hit.getIndex()).id(hit.getId())
                        .setIfSeqNo(hit.getSeqNo())
                        .setIfPrimaryTerm(hit.getPrimaryTerm());
                    DocumentField routingField = hit.field("_routing");
                    if (routingField != null && routingField.getValue() != null) {
                        delete.routing(routingField.getValue().toString());
                    }
                    bulk.add(delete);
                    touched.add(hit.getIndex());
                }
                if (bulk.numberOfActions() > 0) {
                    batches++;
                    BulkResponse bulkResponse = client.bulk(bulk).actionGet();
                    try {
                        for (BulkItemResponse item : bulkResponse.getItems()) {
                            if (item.isFailed()) {
                                if (item.getFailure().getStatus() == RestStatus.CONFLICT) {
                                    conflicts++;
                                    if (abortOnConflict) {
                                        failures.add(item.getFailure());
                                    }
                                } else {
                                    failures.add(item.getFailure());
                                }
                            } else if (item.getResponse().getResult() == DocWriteResponse.Result.DELETED) {
                                deleted++;
                            }
                        }
                    } finally {
                        bulkResponse.decRef();
                    }
                    if (failures.isEmpty() == false) {
                        break outer;
                    }
                }
                if (maxDocs > 0 && processed >= maxDocs) {
                    break;
                }
                SearchResponse next = client.searchScroll(new SearchScrollRequest(scrollId).scroll(scroll)).actionGet();
                response.decRef();
                response = next;
            }
        } finally {
            response.decRef();
            if (scrollId != null) {
                ClearScrollRequest clear = new ClearScrollRequest();
                clear.addScrollId(scrollId);
                try {
                    client.clearScroll(clear).actionGet();
                } catch (Exception ignored) {
                    // scroll contexts expire on their own
                }
            }
        }
        if (refresh && touched.isEmpty() == false) {
            client.admin().indices().prepareRefresh(touched.toArray(String[]::new)).get();
        }

        RestStatus status = RestStatus.OK;
        out.startObject();
        out.field("took", (System.nanoTime() - start) / 1_000_000);
        out.field("timed_out", timedOut);
        out.field("total", total);
        out.field("deleted", deleted);
        out.field("batches", batches);
        out.field("version_conflicts", conflicts);
        out.field("noops", 0);
        out.startObject("retries").field("bulk", 0).field("search", 0).endObject();
        out.field("throttled_millis", 0);
        out.field("requests_per_second", -1.0);
        out.field("throttled_until_millis", 0);
        out.startArray("failures");
        for (BulkItemResponse.Failure f : failures) {
            if (f.getStatus().getStatus() > status.getStatus()) {
                status = f.getStatus();
            }
            out.startObject();
            out.field("index", f.getIndex());
            out.field("id", f.getId());
            out.startObject("cause");
            ElasticsearchException.generateThrowableXContent(out, ToXContent.EMPTY_PARAMS, f.getCause());
            out.endObject();
            out.field("status", f.getStatus().getStatus());
            out.endObject();
        }
        out.endArray();
        out.endObject();
        return status;
    }
}
