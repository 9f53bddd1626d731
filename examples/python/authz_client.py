#!/usr/bin/env python3
"""The README's quick start (a first decision), over gRPC from Python, with no generated code.

Messages come from a descriptor set that `buf build` writes (`npx buf build -o authz.binpb`),
loaded at run time; calls are generic unary calls of grpcio. Runs with Debian's python3-grpcio
and python3-protobuf (tested with Debian 12's grpcio 1.51 and protobuf 4.21):

    npx buf build -o /tmp/authz.binpb
    /usr/bin/python3 examples/python/authz_client.py --target 127.0.0.1:8080 \
        --api-key "$(cat data/bootstrap-api-key)" --descriptors /tmp/authz.binpb

It creates a tenant, a scope, a subject, a role with a permission, a membership and a role
assignment, reads each write's `x-revision` from the gRPC trailers, asks for a decision at
least as fresh as the last write, and shows how an error's `authz.v1.ErrorInfo` detail is read
from the `grpc-status-details-bin` trailer (a `google.rpc.Status`).
"""

import argparse
import os
import secrets
import sys

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory

ERROR_DETAILS_TRAILER = "grpc-status-details-bin"
TYPE_URL_PREFIX = "type.googleapis.com/"


class Schema:
    """Message classes and methods of a descriptor set (`buf build` output)."""

    def __init__(self, path):
        with open(path, "rb") as f:
            files = descriptor_pb2.FileDescriptorSet.FromString(f.read())
        self.pool = descriptor_pool.DescriptorPool()
        # buf build writes every file after the files it imports.
        for file in files.file:
            self.pool.Add(file)
        self._factory = None

    def message_class(self, full_name):
        desc = self.pool.FindMessageTypeByName(full_name)
        # GetMessageClass is protobuf 4.22+; MessageFactory.GetPrototype is what older ones have.
        if hasattr(message_factory, "GetMessageClass"):
            return message_factory.GetMessageClass(desc)
        if self._factory is None:
            self._factory = message_factory.MessageFactory(self.pool)
        return self._factory.GetPrototype(desc)

    def method(self, service, name):
        return self.pool.FindServiceByName(service).FindMethodByName(name)


def to_dict(message):
    """Proto JSON as a dict, fields at their defaults included (`allowed: false`)."""
    try:
        return json_format.MessageToDict(message, always_print_fields_with_no_presence=True)  # protobuf 5.26+
    except TypeError:
        return json_format.MessageToDict(message, including_default_value_fields=True)


class AuthzError(Exception):
    """A failed call: the gRPC code, the message and the `authz.v1.ErrorInfo` detail."""

    def __init__(self, code, message, reason, field):
        super().__init__(f"{code.name}: {message}")
        self.code, self.message, self.reason, self.field = code, message, reason, field


class Client:
    """Unary calls to the control plane, JSON-like dicts in and out (proto JSON field names)."""

    def __init__(self, target, api_key, schema, timeout=10.0):
        self.channel = grpc.insecure_channel(target)
        self.metadata = [("x-api-key", api_key)]
        self.schema = schema
        self.timeout = timeout
        self.status_class = schema.message_class("google.rpc.Status")
        self.error_info_class = schema.message_class("authz.v1.ErrorInfo")

    def call(self, service, name, request):
        """Calls `service/name`; returns (response as a dict, the `x-revision` trailer or None)."""
        method = self.schema.method(service, name)
        request_class = self.schema.message_class(method.input_type.full_name)
        response_class = self.schema.message_class(method.output_type.full_name)
        stub = self.channel.unary_unary(
            f"/{service}/{name}",
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=response_class.FromString,
        )
        message = json_format.ParseDict(request, request_class())
        try:
            # with_call: the response and the call, whose trailers carry x-revision.
            response, call = stub.with_call(message, metadata=self.metadata, timeout=self.timeout)
        except grpc.RpcError as err:
            raise self._error(err) from None
        revision = dict(call.trailing_metadata() or ()).get("x-revision")
        return to_dict(response), revision

    def _error(self, err):
        """Reads the ErrorInfo detail out of the google.rpc.Status in the trailers."""
        reason, field = None, None
        for key, value in err.trailing_metadata() or ():
            if key != ERROR_DETAILS_TRAILER:
                continue
            status = self.status_class.FromString(value)  # -bin trailers arrive as bytes
            for detail in status.details:
                if detail.type_url == TYPE_URL_PREFIX + "authz.v1.ErrorInfo":
                    info = self.error_info_class.FromString(detail.value)
                    reason = info.DESCRIPTOR.fields_by_name["reason"].enum_type.values_by_number[info.reason].name
                    field = info.field or None
        return AuthzError(err.code(), err.details(), reason, field)


def first_decision(client):
    """The README's quick start ("a first decision"), over gRPC."""
    revision = None

    def write(service, name, request, field):
        """A create call; returns the created entity (gRPC answers `{<field>: entity}`)."""
        nonlocal revision
        response, written = client.call(f"authz.v1.{service}", name, request)
        # Writes that touch no tenant (scope types) send no x-revision.
        revision = written or revision
        entity = response[field]
        print(f"{field}: {entity['id']} x-revision={written or '-'}")
        return entity

    tenant = write("TenancyService", "CreateTenant", {"name": "acme"}, "tenant")
    # Scope types are global and their names unique: a fresh name lets the example run again.
    team = write("ScopeService", "CreateScopeType", {"name": f"team-{secrets.token_hex(4)}"}, "scopeType")
    scope = write("ScopeService", "CreateScope", {"tenantId": tenant["id"], "name": "eng", "typeId": team["id"]}, "scope")
    alice = write("SubjectService", "CreateSubject", {"tenantId": tenant["id"], "type": "user", "externalId": "alice"}, "subject")
    role = write("RoleService", "CreateRole", {"scopeId": scope["id"], "key": "editor", "name": "Editor"}, "role")
    permission = write(
        "PermissionService", "CreatePermission",
        {"scopeId": scope["id"], "action": "edit", "resourceType": "doc", "resourcePattern": "*"}, "permission",
    )
    write("RoleService", "CreateRolePermission", {"roleId": role["id"], "permissionId": permission["id"]}, "rolePermission")
    membership = write("MembershipService", "CreateMembership", {"subjectId": alice["id"], "scopeId": scope["id"]}, "membership")
    write("MembershipService", "CreateRoleAssignment", {"membershipId": membership["id"], "roleId": role["id"]}, "roleAssignment")
    doc_type = write("ResourceTypeService", "CreateResourceType", {"name": "Document", "key": "doc", "scopeId": scope["id"]}, "resourceType")
    resource = write(
        "ResourceService", "CreateResource",
        {"resourceTypeId": doc_type["id"], "ownerScopeId": scope["id"], "externalResourceId": "readme"}, "resource",
    )

    # Read your own write anywhere: ask for a decision at least as fresh as the last write.
    decision, _ = client.call("authz.v1.DecisionService", "Evaluate", {
        "actor": {"subjectId": alice["id"]},
        "scopeId": scope["id"],
        "action": "edit",
        "resource": {"resourceId": resource["id"]},
        "consistency": {"minRevision": revision},
    })
    # int64 fields (revision) are strings in proto JSON.
    print(f"evaluate: allowed={str(decision['allowed']).lower()} reason={decision['reason']} revision={decision['revision']}")

    # A mistake, and what the server says about it.
    try:
        client.call("authz.v1.SubjectService", "CreateSubject", {"tenantId": tenant["id"], "type": "robot", "externalId": "r2"})
        print("error: none (unexpected)")
    except AuthzError as err:
        print(f"error: {err.code.name} reason={err.reason} field={err.field} message={err.message}")
    return decision


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default=os.environ.get("AUTHZ_TARGET", "127.0.0.1:8080"), help="host:port of the control plane")
    parser.add_argument("--api-key", default=os.environ.get("AUTHZ_API_KEY"), help="a platform API key (or AUTHZ_API_KEY)")
    parser.add_argument("--descriptors", default=os.environ.get("AUTHZ_DESCRIPTORS", "authz.binpb"), help="the output of `buf build -o`")
    args = parser.parse_args()
    if not args.api_key:
        parser.error("--api-key (or AUTHZ_API_KEY) is required")
    if not os.path.exists(args.descriptors):
        parser.error(f"--descriptors: {args.descriptors} does not exist; make it with `npx buf build -o {args.descriptors}`")
    client = Client(args.target, args.api_key, Schema(args.descriptors))
    try:
        first_decision(client)
    except AuthzError as err:
        print(f"failed: {err} (reason {err.reason}, field {err.field})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
