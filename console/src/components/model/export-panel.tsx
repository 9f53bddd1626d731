/**
 * The tenant exported as a model file (YAML, the normal form: the same state gives the same
 * bytes), to read, download, or take as the starting point of an edit.
 */
import { useQuery } from '@tanstack/react-query';
import { TenantModelService } from '../../../../gen/authz/v1/tenant_model_service_pb.js';
import { client } from '../../api/transport.js';
import { QueryState } from '../states.js';

export const exportQueryKey = (tenantId: string) => ['model-export', tenantId];

/** Saves `text` as a file through a Blob URL (nothing leaves the browser). */
function download(text: string, fileName: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: 'application/yaml' }));
  const link = document.createElement('a');
  link.href = url;
  link.download = fileName;
  document.body.append(link);
  link.click();
  link.remove();
  // Revoked once the browser has taken the download; at once could cancel it in some browsers.
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

export function ExportPanel({ tenantId, onEdit }: { tenantId: string; onEdit: (document: string, fileName: string) => void }) {
  const fileName = `${tenantId}.model.yaml`;
  const query = useQuery({
    queryKey: exportQueryKey(tenantId),
    queryFn: () => client(TenantModelService).exportTenantModel({ tenantId, format: 'yaml' }),
  });
  return (
    <QueryState query={query} what="the exported model">
      {(exported) => (
        <>
          <p>
            The tenant at revision <strong data-testid="export-revision">{String(exported.revision)}</strong>, in normal form: applying it unchanged plans nothing.
          </p>
          <div className="button-row">
            <button type="button" className="primary" aria-describedby="download-file-name" onClick={() => download(exported.document, fileName)}>Download</button>
            <button type="button" onClick={() => onEdit(exported.document, fileName)}>Edit a copy below</button>
            <button type="button" onClick={() => void query.refetch()} disabled={query.isFetching}>{query.isFetching ? 'Exporting…' : 'Export again'}</button>
          </div>
          <p className="help">Downloads as <code id="download-file-name">{fileName}</code>.</p>
          <pre className="model-export" tabIndex={0} aria-label="The exported model (YAML)">{exported.document}</pre>
        </>
      )}
    </QueryState>
  );
}
